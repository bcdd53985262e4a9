#pragma once
// Conv2d: a k×k convolution (cross-correlation, as in every framework).
//   x (N, Cin, H, W)  W (Cout, Cin, k, k)  b (Cout)  y (N, Cout, Ho, Wo)
//   Ho = (H + 2·padding − k) / stride + 1   (same for Wo)
// The op (framework/ops) does it as im2col + GEMM, forward and backward.
#include "framework/nn/module.h"

namespace hg::nn {

class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, Generator& gen,
         int64_t stride = 1, int64_t padding = 0, bool bias = true);
  Tensor forward(const Tensor& x) override;  // (N, Cin, H, W) -> (N, Cout, Ho, Wo)
  std::string describe() const override;

  Tensor weight;  // (Cout, Cin, k, k)
  Tensor bias;    // (Cout), undefined when bias = false (before a BatchNorm it is redundant)
  const int64_t in_channels, out_channels, kernel_size, stride, padding;
};

}  // namespace hg::nn
