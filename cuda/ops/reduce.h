#pragma once
// Sums on device buffers, accumulated in F32 whatever the storage type (adding 10^4 F16
// numbers in F16 stalls once the running sum's ULP exceeds the addends).
//
// A tensor reduced along one dim is seen as (outer, d, inner): x[o][k][i] at (o·d + k)·inner + i.
//   (A, B, C) along dim 1  ->  outer = A, d = B, inner = C, result (A, C)
// `scale` multiplies the result: 1 for sum, 1/d (or 1/n) for mean.
#include "cuda/ops/dtype.h"

namespace hg::cuda {

// y[0] = scale · Σ x[0..n). Two passes: each block sums a slice into a partial, then one
// block sums the partials. y is a device pointer to one element of type dt.
void launch_sum_all(DType dt, const void* x, int64_t n, void* y, float scale = 1.0f);

// y[o][i] = scale · Σ_k x[o][k][i]; y is (outer, inner). One warp per output element.
void launch_sum_dim(DType dt, const void* x, int64_t outer, int64_t d, int64_t inner, void* y, float scale = 1.0f);

// Backward of both: dx[o][k][i] = scale · dy[o][i] (the gradient of a sum copies back).
void launch_sum_dim_backward(DType dt, const void* dy, int64_t outer, int64_t d, int64_t inner, void* dx, float scale = 1.0f);

}  // namespace hg::cuda
