#pragma once
// The causal mask of self-attention on device buffers (the CPU side: framework/ops/attention.cpp).
// Legend: scores (..., T, T), queries i × keys j, seen as `rows` = numel / T rows of T; row r
// is query i = r % T. Storage F32/F16/BF16, math F32.
//
// causal_mask: a copy with the keys j > i replaced,
//   y[i, j] = x[i, j] if j ≤ i, else `above`
// with above = −inf in the forward. Its backward is the same copy of dy with above = 0
// (∂y[i, j]/∂x[i, j] is 1 below and on the diagonal, 0 above).
//
// causal_softmax with scale s (1/√D): per row i, over the keys j ≤ i only,
//   m = max_{j≤i} s·x[i, j]     y[i, j] = e^(s·x[i, j] − m) / Σ_{k≤i} e^(s·x[i, k] − m),   y = 0 for j > i
//   backward: dx[i, j] = s · y[i, j] · (dy[i, j] − Σ_{k≤i} dy[i, k]·y[i, k]),             dx = 0 for j > i
// One warp per row (as softmax.cu): its lanes stride along the keys; warp shuffles give the
// max, the sum and the dot product. The masked keys are never read.
#include "cuda/ops/dtype.h"

#include <cstdint>

namespace hg::cuda {

void launch_causal_mask(DType dt, const void* x, void* y, int64_t rows, int64_t T, float above);
void launch_causal_softmax_forward(DType dt, const void* x, void* y, int64_t rows, int64_t T, float scale);
void launch_causal_softmax_backward(DType dt, const void* y, const void* dy, void* dx, int64_t rows, int64_t T,
                                    float scale);

}  // namespace hg::cuda
