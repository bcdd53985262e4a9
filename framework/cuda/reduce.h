#pragma once
// framework/cuda/reduce.h — sums on GPU tensors, accumulated in F32 (cuda/ops/reduce.h).
// `scale` multiplies the result: 1 for sum, 1/n for mean.
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg::cuda {

Tensor sum_all(const char* op, const Tensor& x, double scale);  // shape (), x's dtype
Tensor sum_dim(const char* op, const Tensor& x, int64_t dim, bool keepdim, double scale);
// dx (x_shape) = scale · dy copied along `dim` (dim < 0: every element, for sum_all).
Tensor sum_backward(const Tensor& dy, const Shape& x_shape, int64_t dim, double scale);

}  // namespace hg::cuda
