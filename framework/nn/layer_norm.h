#pragma once
// LayerNorm: normalise each position's C features to mean 0 and variance 1, then scale and
// shift them by learned weight (C) and bias (C).   (..., C) -> (..., C)
// weight starts at 1 and bias at 0 (PyTorch's nn.LayerNorm), so at first it only normalises.
// The math, forward and backward, is the op (framework/ops/layer_norm.h).
#include <cstdint>

#include "framework/nn/module.h"

namespace hg::nn {

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t features, double eps = 1e-5);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

  Tensor weight, bias;  // (C)
  const int64_t features;
  const double eps;
};

}  // namespace hg::nn
