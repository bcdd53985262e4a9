#include "framework/nn/conv2d.h"

#include "framework/nn/init.h"
#include "framework/ops/ops.h"

namespace hg::nn {

Conv2d::Conv2d(int64_t cin, int64_t cout, int64_t k, Generator& gen, int64_t stride_,
               int64_t padding_, bool with_bias)
    : in_channels(cin), out_channels(cout), kernel_size(k), stride(stride_), padding(padding_) {
  const int64_t fan_in = cin * k * k;
  weight = init::default_uniform({cout, cin, k, k}, fan_in, gen);
  register_parameter("weight", &weight);
  if (with_bias) {
    bias = init::default_uniform({cout}, fan_in, gen);
    register_parameter("bias", &bias);
  }
}

Tensor Conv2d::forward(const Tensor& x) { return conv2d(x, weight, bias, stride, padding); }

std::string Conv2d::describe() const {
  std::string s = "Conv2d(" + std::to_string(in_channels) + " -> " + std::to_string(out_channels) +
                  ", " + std::to_string(kernel_size) + "x" + std::to_string(kernel_size);
  if (stride != 1) s += ", stride " + std::to_string(stride);
  if (padding != 0) s += ", padding " + std::to_string(padding);
  return s + (bias.defined() ? ")" : ", no bias)");
}

}  // namespace hg::nn
