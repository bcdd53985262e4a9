#pragma once
// cuBLAS behind `--gemm cublas`, opened the first time a matmul asks for it.
//
// Why the engine does not link cuBLAS: libcublas, and the libcublasLt it brings in, set
// themselves up when a program starts — about 0.4 s of CPU time on a 2-core machine, in every
// program linked to them, whether it ever multiplies on a GPU or not. Every chapter program
// and test would pay that at each start for a flag that few runs use. So hg_cuda links only
// the CUDA runtime, and matmul.cu reaches cuBLAS through this file: the first call opens the
// library (dlopen), looks up the three functions used here (dlsym) and creates one handle,
// kept for the life of the process (a handle costs milliseconds and a workspace).
//
// The GEMM ladder's own driver and GPU tests, which time or check cuBLAS itself, link it as
// usual (hg_cuda_blas: rung 00, cuBLASLt's FP8 GEMM).
#include <cublas_v2.h>

namespace hg::cuda {

// Row-major C (M, N) F32 = op(A)·op(B) through cublasGemmEx: A, B of type `in` (F32, F16,
// BF16), `compute` as cuBLAS names it (CUBLAS_COMPUTE_32F, ..._32F_FAST_TF32). Throws
// std::runtime_error naming the library when it cannot be opened, or the call and cuBLAS's
// status when the GEMM fails.
void cublas_gemm_on_demand(bool ta, bool tb, int M, int N, int K, const void* A, const void* B, cudaDataType in,
                           cublasComputeType_t compute, float* C);

}  // namespace hg::cuda
