#pragma once
// framework/ops/shape.h — ops that change how numbers are arranged, not their values.
//
// reshape and slice return *views* (no copy) when the input is contiguous; their backward
// rearranges the gradient the opposite way. transpose, permute, narrow and expand are
// always views: they change the shape, strides and offset, never the numbers, so the next
// op that needs row-major memory copies (contiguous()); reshape of such a view copies too.
// Every op here records autograd.
#include <vector>

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

// Broadcast view (no copy): size-1 dims of x repeat to `shape` with stride 0, and missing
// leading dims are added. Backward sums the gradient over the repeated dims.
Tensor expand(const Tensor& x, const Shape& shape);

// ---- views for attention: (B, T, C) -> (B, T, H, D) -> (B, H, T, D) -------------------
// Swap two dims (their sizes and strides). (B, T, H, D) transpose(1, 2) -> (B, H, T, D)
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
// Reorder every dim: y.shape[i] = x.shape[dims[i]]. permute(x, {0, 2, 1, 3}) = transpose(1, 2)
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
// Elements [start, start + length) along `dim`. (B, T, 3C) narrow(2, C, C) -> k (B, T, C)
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
// Consecutive narrows of `size` along `dim` (the last may be shorter):
// split((B, T, 3C), C, 2) -> {q, k, v}, each (B, T, C).
std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim);

}  // namespace hg
