// Rung 00: cuBLAS, the yardstick every hand-written rung is compared with.
//
// cuBLAS is column-major; our matrices are row-major. A row-major (M,N) matrix is the same
// bytes as a column-major (N,M) matrix, i.e. its transpose. So instead of C = A·B we ask
// cuBLAS for Cᵀ = Bᵀ·Aᵀ, passing B first: m = N, n = M, k = K, with leading dimensions N, K, N.
// No transposes are requested and no data moves.
//
// cublasSgemm keeps the default math mode, which on every GPU is true F32 (no TF32).
// cublasGemmEx takes F16 or BF16 A and B, accumulates in F32 (CUBLAS_COMPUTE_32F) and writes
// F32: exactly the types of rungs 05-08. For TF32 it takes F32 A and B and is told that it may
// round them to TF32 (CUBLAS_COMPUTE_32F_FAST_TF32); how cuBLAS rounds them is its own choice,
// so the driver checks it against a bound that allows either rounding (validate.h).
#include "cuda/gemm/ladder.h"
#include "cuda/runtime/check.h"

namespace hg::cuda::gemm {

void gemm_00_cublas_f32(cublasHandle_t handle, int M, int N, int K, const float* A, const float* B, float* C) {
  const float alpha = 1.0f, beta = 0.0f;
  HG_CUBLAS_CHECK(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N));
}

void gemm_00_cublas_f16(cublasHandle_t handle, int M, int N, int K, const __half* A, const __half* B, float* C) {
  const float alpha = 1.0f, beta = 0.0f;
  HG_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16F, N, A,
                               CUDA_R_16F, K, &beta, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void gemm_00_cublas_bf16(cublasHandle_t handle, int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B,
                         float* C) {
  const float alpha = 1.0f, beta = 0.0f;
  HG_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_16BF, N, A,
                               CUDA_R_16BF, K, &beta, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void gemm_00_cublas_tf32(cublasHandle_t handle, int M, int N, int K, const float* A, const float* B, float* C) {
  const float alpha = 1.0f, beta = 0.0f;
  HG_CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, CUDA_R_32F, N, A, CUDA_R_32F,
                               K, &beta, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
}

}  // namespace hg::cuda::gemm
