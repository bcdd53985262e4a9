#include "framework/nn/layer_norm.h"

#include "framework/ops/ops.h"

namespace hg::nn {

LayerNorm::LayerNorm(int64_t C, double eps_) : features(C), eps(eps_) {
  weight = Tensor::ones({C});
  bias = Tensor::zeros({C});
  register_parameter("weight", &weight);
  register_parameter("bias", &bias);
}

Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, weight, bias, eps); }

std::string LayerNorm::describe() const { return "LayerNorm(" + std::to_string(features) + ")"; }

}  // namespace hg::nn
