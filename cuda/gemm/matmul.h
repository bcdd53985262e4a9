#pragma once
// The GEMM entry the framework calls for matmul, linear and conv2d on CUDA tensors: the best
// rung of the ladder for the dtype, or cuBLAS for comparison (--gemm cublas).
//
//   C (M,N) = op(A) · op(B)    row-major; op(X) = X, or Xᵀ when trans_x
//   A is stored (M,K), or (K,M) with trans_a;  B is stored (K,N), or (N,K) with trans_b
//
//   F32:          Ladder -> rung 04 (register blocked)            Cublas -> cublasSgemm
//   F16 -> F32:   Ladder -> rung 07 on sm_80+, rung 06 on sm_75   Cublas -> cublasGemmEx
// The ladder rungs take untransposed operands, so a transposed operand is first copied
// into a transposed temporary (cuda/ops/transpose). cuBLAS handles transposes itself.
#include <cuda_fp16.h>

namespace hg::cuda {

enum class GemmBackend { Ladder, Cublas };
void set_gemm_backend(GemmBackend backend);   // default: Ladder
GemmBackend gemm_backend();
const char* gemm_backend_name(GemmBackend backend);  // "ladder" / "cublas"

void matmul_f32(bool trans_a, bool trans_b, int M, int N, int K, const float* A, const float* B, float* C);
void matmul_f16(bool trans_a, bool trans_b, int M, int N, int K, const __half* A, const __half* B, float* C);

}  // namespace hg::cuda
