#pragma once
// Optimizer updates on device buffers, one fused kernel per step (PyTorch's semantics, as
// framework/optim). Parameters and gradients share a Dtype (F32 normally; F16/BF16 for the
// all-half chapter); the optimizer state (momentum, m, v) is always F32, and the update is
// computed in F32 and rounded once into the parameter.
//
// SGD:   g = grad + weight_decay · p
//        buf = g                                   on the first step (first_step = true)
//        buf = momentum · buf + (1 − dampening) · g  after
//        g = nesterov ? g + momentum · buf : buf    (only when momentum != 0)
//        p = p − lr · g
// Adam:  g = grad (+ weight_decay · p, unless decoupled)      decoupled (AdamW): p = p · (1 − lr · weight_decay)
//        m = β1 m + (1 − β1) g,   v = β2 v + (1 − β2) g²
//        p = p − lr · (m / (1 − β1^t)) / (√(v / (1 − β2^t)) + eps)       t = step, from 1
#include "cuda/ops/dtype.h"

namespace hg::cuda {

void sgd_step(Dtype dt, void* param, const void* grad, float* momentum_buf, int64_t n, float lr, float momentum,
              float dampening, float weight_decay, bool nesterov, bool first_step);

void adam_step(Dtype dt, void* param, const void* grad, float* m, float* v, int64_t n, float lr, float beta1,
               float beta2, float eps, float weight_decay, bool decoupled, int64_t step);

// y = x converted between storage types (RNE). F16 -> BF16 goes through F32 (exact), so it
// rounds once.
void cast(Dtype from, const void* x, Dtype to, void* y, int64_t n);

}  // namespace hg::cuda
