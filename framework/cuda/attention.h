#pragma once
// framework/cuda/attention.h — the causal mask and the causal softmax on GPU tensors
// (cuda/ops/attention.h). x, y, dy: (..., T, T) scores, queries × keys, row-major.
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg::cuda {

// y = x below and on the diagonal, `above` above it (−inf: the mask; 0: its backward).
Tensor causal_mask(const Tensor& x, double above);
// y = softmax over the keys j ≤ i of scale·x, 0 above the diagonal; F32 math, x's dtype.
Tensor causal_softmax(const Tensor& x, double scale);
Tensor causal_softmax_backward(const Tensor& y, const Tensor& dy, double scale);

}  // namespace hg::cuda
