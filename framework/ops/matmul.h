#pragma once
// framework/ops/matmul.h — matrix products: matmul and linear (a fully connected layer).
//
// Legend: M rows of the output, N columns, K the summed (reduction) dimension.
//
//   matmul(a, b, trans_a, trans_b) = op(a) · op(b)       op(X) = X, or Xᵀ when its flag is set
//     a: (M, K), or stored (K, M) with trans_a;  b: (K, N), or stored (N, K) with trans_b
//   Batched: a (..., M, K) and b (..., K, N) multiply matrix by matrix over the leading
//   "batch" dims, which broadcast as in torch.matmul: (B, H, T, D) · (B, H, D, T) ->
//   (B, H, T, T); (B, T, C) · (C, N) -> (B, T, N). The flags transpose the last two dims.
//   linear(x, w, b) = x · wᵀ + b
//     x: (N, in)  w: (out, in)  b: (out) or undefined  -> (N, out)
//
// Dtypes: F32 and F64 as themselves. F16 and BF16 do what a tensor core does: F16/BF16
// operands, exact products, F32 accumulation (cpu::gemm_f16 / gemm_bf16), and the F32
// result rounded once to the input dtype. Both operands must share a dtype.
// A batch runs one GEMM per matrix; small matrices run side by side on the threads, large
// ones each use all threads. A batch times one matrix, (..., M, K) · (K, N), is a single
// GEMM of (…·M, K) rows. On the GPU a batch is a loop of the 2-D GEMM (framework/cuda/matmul.h),
// one launch per matrix.
#include "framework/tensor/tensor.h"

namespace hg {

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = Tensor());

}  // namespace hg
