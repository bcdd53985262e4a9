#include "framework/nn/linear.h"

#include "framework/nn/init.h"
#include "framework/ops/ops.h"

namespace hg::nn {

Linear::Linear(int64_t in, int64_t out, Generator& gen, bool with_bias)
    : in_features(in), out_features(out) {
  weight = init::default_uniform({out, in}, in, gen);
  register_parameter("weight", &weight);
  if (with_bias) {
    bias = init::default_uniform({out}, in, gen);
    register_parameter("bias", &bias);
  }
}

Tensor Linear::forward(const Tensor& x) {
  if (x.dim() <= 2) return linear(x, weight, bias);
  // (..., in) -> (rows, in) -> (rows, out) -> (..., out); reshape is a view when x is contiguous
  Shape out_shape = x.shape();
  out_shape.back() = out_features;
  return reshape(linear(reshape(x, {-1, x.shape().back()}), weight, bias), out_shape);
}

std::string Linear::describe() const {
  return "Linear(" + std::to_string(in_features) + " -> " + std::to_string(out_features) +
         (bias.defined() ? ")" : ", no bias)");
}

}  // namespace hg::nn
