#include "framework/nn/batch_norm.h"

#include "framework/ops/ops.h"

namespace hg::nn {

BatchNorm2d::BatchNorm2d(int64_t c, double eps_, double momentum_)
    : channels(c), eps(eps_), momentum(momentum_) {
  weight = Tensor::ones({c});
  bias = Tensor::zeros({c});
  running_mean = Tensor::zeros({c});
  running_var = Tensor::ones({c});
  register_parameter("weight", &weight);
  register_parameter("bias", &bias);
  register_buffer("running_mean", &running_mean);
  register_buffer("running_var", &running_var);
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  return batch_norm2d(x, weight, bias, running_mean, running_var, is_training(), momentum, eps);
}

std::string BatchNorm2d::describe() const { return "BatchNorm2d(" + std::to_string(channels) + ")"; }

}  // namespace hg::nn
