#pragma once
// The GEMM ladder: one launcher per rung, all computing the same thing,
//
//     C (M,N) = A (M,K) · B (K,N)        row-major, device pointers, any M, N, K >= 1
//
// Rungs 01-04 are SIMT kernels on F32 (chapter 03). Rungs 05-08 use tensor cores through WMMA
// (chapter 05), and each is one kernel template over the input format, F32 accumulation and
// output for all three:
//
//   T = __half          F16 inputs                       sm_70+
//   T = __nv_bfloat16   BF16 inputs                      sm_80+
//   T = float           F32 inputs rounded to TF32       sm_80+   (cuda/gemm/wmma_format.cuh)
//
// Rung 05 starts over, like rung 01: the simplest correct use of the API, no reuse. Rung 06,
// block tiles staged in shared memory, is the tensor-core counterpart of rung 04; 07 adds the
// skew that removes 06's bank conflicts; 08 overlaps the copies with the math. Rung 00 is
// cuBLAS with the same types, the yardstick. Each rung lives in its own file,
// cuda/gemm/NN_*.cu, self-contained, so that `diff` between neighbours shows one idea:
//
//   00_cublas.cu                           cublasSgemm (F32) / cublasGemmEx (F16, BF16, TF32 in, F32 accumulate)
//   01_naive.cu                            one thread per output, threadIdx.x -> row
//   02_coalesced.cu                        threadIdx.x -> column: coalesced loads and stores
//   03_shared_tiled.cu                     32 x 32 tiles of A and B staged in shared memory
//   04_register_blocked.cu                 128 x 128 block tile, 8 x 8 outputs per thread in registers
//   05_wmma.cu                             one warp per 16 x 16 tile, fragments from global memory
//   06_wmma_block_tiled.cu                 128 x 128 block tile in shared memory, 8 warps (04's counterpart)
//   07_wmma_skewed.cu                      06 with skewed shared-memory rows: no bank conflicts
//   08_wmma_cp_async_double_buffered.cu    07 + cp.async into two shared buffers (sm_80+)
//
// Rung 09, FP8 on the tensor cores (mma.sync, sm_89+), takes B stored (N, K) and per-tensor
// scales like every FP8 GEMM, so it has its own header, cuda/gemm/fp8_mma.h, and its own
// reference, cuBLASLt's FP8 GEMM (cuda/gemm/cublaslt_fp8.h).
//
// Launchers run on the default stream and return without waiting (check errors with
// hg::cuda::synchronize()). The BF16 and TF32 launchers throw on a GPU older than sm_80. The
// index math is in cuda/gemm/layout.h.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace hg::cuda::gemm {

void gemm_00_cublas_f32(cublasHandle_t handle, int M, int N, int K, const float* A, const float* B, float* C);
void gemm_00_cublas_f16(cublasHandle_t handle, int M, int N, int K, const __half* A, const __half* B, float* C);
void gemm_00_cublas_bf16(cublasHandle_t handle, int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B,
                         float* C);
void gemm_00_cublas_tf32(cublasHandle_t handle, int M, int N, int K, const float* A, const float* B, float* C);

void gemm_01_naive(int M, int N, int K, const float* A, const float* B, float* C);
void gemm_02_coalesced(int M, int N, int K, const float* A, const float* B, float* C);
void gemm_03_shared_tiled(int M, int N, int K, const float* A, const float* B, float* C);
void gemm_04_register_blocked(int M, int N, int K, const float* A, const float* B, float* C);

// T: __half, __nv_bfloat16 or float (TF32); instantiated for these three in the .cu files.
template <class T> void gemm_05_wmma(int M, int N, int K, const T* A, const T* B, float* C);
template <class T> void gemm_06_wmma_block_tiled(int M, int N, int K, const T* A, const T* B, float* C);
template <class T> void gemm_07_wmma_skewed(int M, int N, int K, const T* A, const T* B, float* C);
template <class T> void gemm_08_wmma_cp_async_double_buffered(int M, int N, int K, const T* A, const T* B, float* C);

// The rungs as tables, for the driver, the tests and the chapters.
using GemmF32 = void (*)(int, int, int, const float*, const float*, float*);
struct RungF32 { const char* id; const char* name; GemmF32 run; };
inline constexpr RungF32 kRungsF32[] = {
    {"01", "naive", gemm_01_naive},
    {"02", "coalesced", gemm_02_coalesced},
    {"03", "shared_tiled", gemm_03_shared_tiled},
    {"04", "register_blocked", gemm_04_register_blocked},
};

template <class T> using GemmTC = void (*)(int, int, int, const T*, const T*, float*);
template <class T> struct RungTC { const char* id; const char* name; GemmTC<T> run; };
template <class T>
inline constexpr RungTC<T> kRungsTC[] = {
    {"05", "wmma", gemm_05_wmma<T>},
    {"06", "wmma_block_tiled", gemm_06_wmma_block_tiled<T>},
    {"07", "wmma_skewed", gemm_07_wmma_skewed<T>},
    {"08", "wmma_cp_async_double_buffered", gemm_08_wmma_cp_async_double_buffered<T>},
};

}  // namespace hg::cuda::gemm
