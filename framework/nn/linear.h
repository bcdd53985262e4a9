#pragma once
// Linear: y = x · Wᵀ + b       x (N, in)  W (out, in)  b (out)  y (N, out)
// x may have more leading dims, (..., in) -> (..., out), as in PyTorch: they fold into N
// (a GPT's (B, T, C) is B·T rows of C).
// The math, forward and backward, lives in the op (framework/ops); the layer only owns the
// parameters and initialises them as PyTorch does (init.h).
#include "framework/nn/module.h"

namespace hg::nn {

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, Generator& gen, bool bias = true);
  Tensor forward(const Tensor& x) override;  // (N, in) -> (N, out); (..., in) -> (..., out)
  std::string describe() const override;

  Tensor weight;  // (out, in)
  Tensor bias;    // (out), undefined when bias = false
  const int64_t in_features, out_features;
};

}  // namespace hg::nn
