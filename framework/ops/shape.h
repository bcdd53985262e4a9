#pragma once
// framework/ops/shape.h — ops that change how numbers are arranged, not their values.
//
// reshape and slice return *views* (no copy) when the input is contiguous; their backward
// rearranges the gradient the opposite way.
#include "framework/tensor/tensor.h"

namespace hg {

// Same numbers, new shape. One size may be -1 (inferred). (2, 6) -> (3, 4), (N, C, H, W) -> (N, -1)
Tensor reshape(const Tensor& x, const Shape& shape);
// Collapse dims start_dim..end: (N, C, H, W) -> (N, C·H·W) with the default start_dim = 1.
Tensor flatten(const Tensor& x, int64_t start_dim = 1);
// Rows [begin, end) of dim 0 (a batch slice); a view of the same storage.
Tensor slice(const Tensor& x, int64_t begin, int64_t end);
// A row-major copy of a strided view.
Tensor contiguous(const Tensor& x);
// A copy with its own storage.
Tensor clone(const Tensor& x);

// Broadcast view (no copy, no autograd): size-1 dims of x repeat to `shape` with stride 0.
Tensor expand(const Tensor& x, const Shape& shape);

}  // namespace hg
