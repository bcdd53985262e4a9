// framework/cuda/optim.cpp — the optimizers' updates on the GPU (optim.h).
#include "framework/cuda/optim.h"

#include "cuda/ops/optim.h"
#include "framework/cuda/common.h"

namespace hg::cuda {

void sgd_step(Tensor& p, const Tensor& grad, Tensor& momentum_buf, double lr, double momentum, double dampening,
              double weight_decay, bool nesterov, bool first_step) {
  launch_sgd_step(kernel_dtype("SGD", p), p.raw_data(), grad.raw_data(),
                  momentum_buf.defined() ? f32_data(momentum_buf) : nullptr, p.numel(), static_cast<float>(lr),
                  static_cast<float>(momentum), static_cast<float>(dampening), static_cast<float>(weight_decay),
                  nesterov, first_step);
}

void adam_step(Tensor& p, const Tensor& grad, Tensor& m, Tensor& v, double lr, double beta1, double beta2,
               double eps, double weight_decay, bool decoupled, int64_t step) {
  launch_adam_step(kernel_dtype(decoupled ? "AdamW" : "Adam", p), p.raw_data(), grad.raw_data(), f32_data(m),
                   f32_data(v), p.numel(), static_cast<float>(lr), static_cast<float>(beta1),
                   static_cast<float>(beta2), static_cast<float>(eps), static_cast<float>(weight_decay),
                   decoupled, step);
}

}  // namespace hg::cuda
