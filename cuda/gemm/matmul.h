#pragma once
// The GEMM entry the framework calls for matmul, linear and conv2d on CUDA tensors: the best
// rung of the ladder for the dtype, or cuBLAS for comparison (--gemm cublas).
//
//   C (M,N) = op(A) · op(B)    row-major; op(X) = X, or Xᵀ when trans_x; C is F32
//   A is stored (M,K), or (K,M) with trans_a;  B is stored (K,N), or (N,K) with trans_b
//
//   inputs        Ladder                                        Cublas
//   F32           rung 04 (register blocked, true F32)          cublasSgemm
//   F32 + TF32    rung 08 on TF32 tensor cores (sm_80+)         cublasGemmEx, COMPUTE_32F_FAST_TF32
//   F16           rung 08 (sm_80+), rung 07 on sm_75            cublasGemmEx, F16 in, F32 compute
//   BF16          rung 08 (sm_80+)                              cublasGemmEx, BF16 in, F32 compute
//
// On a GPU older than sm_80 there are no BF16 or TF32 tensor cores: BF16 inputs are widened to
// F32 (exact) and run on rung 04 — the same numbers as a BF16 tensor core up to the order of the
// sums — and F32 stays true F32 even when TF32 is allowed. Each prints one line to stderr the
// first time it happens.
//
// The ladder rungs take untransposed operands, so a transposed operand is first copied into a
// transposed temporary (cuda/ops/transpose). cuBLAS handles transposes itself. A C taller than
// one launch's grid allows (8,388,480 rows) is computed in row slabs (cuda/gemm/layout.h).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda/gemm/backend.h"  // which GEMM (ladder / cuBLAS), TF32 on or off

namespace hg::cuda {

void launch_matmul_f32(bool trans_a, bool trans_b, int M, int N, int K, const float* A, const float* B, float* C);
void launch_matmul_f16(bool trans_a, bool trans_b, int M, int N, int K, const __half* A, const __half* B, float* C);
void launch_matmul_bf16(bool trans_a, bool trans_b, int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B,
                        float* C);

}  // namespace hg::cuda
