#pragma once
// framework/cuda/optim.h — the optimizers' fused updates on GPU tensors (cuda/ops/optim.h:
// the same formulas as the loops of framework/optim/sgd.cpp and adam.cpp). The parameter and
// its gradient share a dtype (F32, F16 or BF16); the state (momentum, m, v) is F32.
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg::cuda {

// One SGD step of p; `momentum_buf` is undefined when momentum is 0.
void sgd_step(Tensor& p, const Tensor& grad, Tensor& momentum_buf, double lr, double momentum, double dampening,
              double weight_decay, bool nesterov, bool first_step);
// One Adam (decoupled: AdamW) step of p; `step` counts from 1.
void adam_step(Tensor& p, const Tensor& grad, Tensor& m, Tensor& v, double lr, double beta1, double beta2,
               double eps, double weight_decay, bool decoupled, int64_t step);

}  // namespace hg::cuda
