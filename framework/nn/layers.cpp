#include "framework/nn/layers.h"

#include <cstdio>
#include <stdexcept>

#include "framework/ops/ops.h"

namespace hg::nn {

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

MaxPool2d::MaxPool2d(int64_t k, int64_t s) : kernel_size(k), stride(s < 0 ? k : s) {}

Tensor MaxPool2d::forward(const Tensor& x) { return max_pool2d(x, kernel_size, stride); }

std::string MaxPool2d::describe() const {
  return "MaxPool2d(" + std::to_string(kernel_size) + "x" + std::to_string(kernel_size) +
         ", stride " + std::to_string(stride) + ")";
}

Tensor GlobalAvgPool2d::forward(const Tensor& x) { return global_avg_pool2d(x); }

Tensor Flatten::forward(const Tensor& x) {
  if (x.dim() < 1) throw std::invalid_argument("Flatten: the input must have a batch dimension");
  return x.reshape({x.size(0), x.numel() / x.size(0)});
}

Dropout::Dropout(double p_, Generator& gen) : p(p_), gen_(gen) {
  if (p < 0.0 || p >= 1.0)
    throw std::invalid_argument("Dropout: p must be in [0, 1), got " + std::to_string(p));
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training(), gen_); }

std::string Dropout::describe() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "Dropout(p=%g)", p);
  return buf;
}

}  // namespace hg::nn
