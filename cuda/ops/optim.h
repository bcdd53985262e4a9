#pragma once
// Optimizer updates on device buffers, one fused kernel per step (PyTorch's semantics, as
// framework/optim). Parameters and gradients share a DType (F32 normally; F16/BF16 for the
// all-half chapter); the optimizer state (momentum, m, v) is always F32, and the update is
// computed in F32 and rounded once into the parameter.
//
// SGD:   g = grad + weight_decay · p              (only when weight_decay != 0)
//        buf = g                                   on the first step (first_step = true)
//        buf = momentum · buf + (1 − dampening) · g  after
//        g = nesterov ? g + momentum · buf : buf    (only when momentum != 0)
//        p = p − lr · g
// Adam:  g = grad (+ weight_decay · p, unless decoupled; only when weight_decay != 0)
//        decoupled (AdamW): p = p · (1 − lr · weight_decay)
//        m = β1 m + (1 − β1) g,   v = β2 v + (1 − β2) g²
//        p = p − step_size · m / (√v / √(1 − β2^t) + eps),   step_size = lr / (1 − β1^t),  t = step, from 1
// "Only when weight_decay != 0", as the CPU optimizers: 0 · p is NaN, not 0, when p is inf or
// NaN, and −0 + 0 is +0. The per-element rules below are the kernels' own code, written once
// so that tests/unit/test_cuda_optim_rule.cpp can check them on the CPU.
#include "cuda/ops/dtype.h"
#include "cuda/runtime/hd.h"

#include <cmath>

namespace hg::cuda {

// SGD on one element: returns the new p; `buf` is its momentum buffer (untouched when
// momentum == 0).
HG_HD float sgd_update(float p, float g, float& buf, float lr, float momentum, float dampening, float weight_decay,
                       bool nesterov, bool first_step) {
  if (weight_decay != 0.0f) g += weight_decay * p;
  if (momentum != 0.0f) {
    buf = first_step ? g : momentum * buf + (1.0f - dampening) * g;
    g = nesterov ? g + momentum * buf : buf;
  }
  return p - lr * g;
}

// The scalars of an Adam step, computed once on the host in double (as the CPU optimizer and
// PyTorch do) and passed to every element.
struct AdamScalars {
  float beta1, beta2, eps, weight_decay;
  float step_size;   // lr / (1 − β1^t)
  float bc2_sqrt;    // √(1 − β2^t)
  float decay;       // 1 − lr · weight_decay (AdamW)
  bool decoupled;
};
// Adam on one element: returns the new p and updates m and v.
HG_HD float adam_update(float p, float g, float& m, float& v, const AdamScalars& s) {
  if (s.decoupled) p *= s.decay;                             // AdamW
  else if (s.weight_decay != 0.0f) g += s.weight_decay * p;  // Adam
  m = s.beta1 * m + (1.0f - s.beta1) * g;
  v = s.beta2 * v + (1.0f - s.beta2) * (g * g);
  return p - s.step_size * (m / (std::sqrt(v) / s.bc2_sqrt + s.eps));
}

void launch_sgd_step(DType dt, void* param, const void* grad, float* momentum_buf, int64_t n, float lr, float momentum,
                     float dampening, float weight_decay, bool nesterov, bool first_step);

void launch_adam_step(DType dt, void* param, const void* grad, float* m, float* v, int64_t n, float lr, float beta1,
                      float beta2, float eps, float weight_decay, bool decoupled, int64_t step);

}  // namespace hg::cuda
