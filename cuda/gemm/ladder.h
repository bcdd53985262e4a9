#pragma once
// The GEMM ladder: one launcher per rung, all computing the same thing,
//
//     C (M,N) = A (M,K) · B (K,N)        row-major, device pointers, any M, N, K >= 1
//
// Rungs 01-04 are SIMT kernels on F32; rungs 05-07 use tensor cores through WMMA with F16
// inputs and F32 accumulation and output (the numerics of hg::cpu::gemm_f16). Rung 00 is
// cuBLAS with the same types, the yardstick. Each rung lives in its own file, cuda/gemm/NN_*.cu,
// self-contained, so that `diff` between neighbours shows one idea:
//
//   00_cublas.cu                           cublasSgemm (F32) / cublasGemmEx (F16 in, F32 accumulate)
//   01_naive.cu                            one thread per output, threadIdx.x -> row
//   02_coalesced.cu                        threadIdx.x -> column: coalesced loads and stores
//   03_shared_tiled.cu                     32 x 32 tiles of A and B staged in shared memory
//   04_register_blocked.cu                 128 x 128 block tile, 8 x 8 outputs per thread in registers
//   05_wmma.cu                             one warp per 16 x 16 tile, 16x16x16 fragments from global
//   06_wmma_block_tiled_skewed.cu          128 x 128 block tile in skewed shared memory, 8 warps
//   07_wmma_cp_async_double_buffered.cu    06 + cp.async into two shared buffers (sm_80+)
//
// Launchers run on the default stream and return without waiting (check errors with
// hg::cuda::synchronize()). The index math is in cuda/gemm/layout.h.
#include <cublas_v2.h>
#include <cuda_fp16.h>

namespace hg::cuda::gemm {

void gemm_00_cublas_f32(cublasHandle_t handle, int M, int N, int K, const float* A, const float* B, float* C);
void gemm_00_cublas_f16(cublasHandle_t handle, int M, int N, int K, const __half* A, const __half* B, float* C);

void gemm_01_naive(int M, int N, int K, const float* A, const float* B, float* C);
void gemm_02_coalesced(int M, int N, int K, const float* A, const float* B, float* C);
void gemm_03_shared_tiled(int M, int N, int K, const float* A, const float* B, float* C);
void gemm_04_register_blocked(int M, int N, int K, const float* A, const float* B, float* C);

void gemm_05_wmma(int M, int N, int K, const __half* A, const __half* B, float* C);
void gemm_06_wmma_block_tiled_skewed(int M, int N, int K, const __half* A, const __half* B, float* C);
void gemm_07_wmma_cp_async_double_buffered(int M, int N, int K, const __half* A, const __half* B, float* C);

// The rungs as a table, for the driver, the tests and the chapters.
using GemmF32 = void (*)(int, int, int, const float*, const float*, float*);
using GemmF16 = void (*)(int, int, int, const __half*, const __half*, float*);
struct RungF32 { const char* id; const char* name; GemmF32 run; };
struct RungF16 { const char* id; const char* name; GemmF16 run; };
inline constexpr RungF32 kRungsF32[] = {
    {"01", "naive", gemm_01_naive},
    {"02", "coalesced", gemm_02_coalesced},
    {"03", "shared_tiled", gemm_03_shared_tiled},
    {"04", "register_blocked", gemm_04_register_blocked},
};
inline constexpr RungF16 kRungsF16[] = {
    {"05", "wmma", gemm_05_wmma},
    {"06", "wmma_block_tiled_skewed", gemm_06_wmma_block_tiled_skewed},
    {"07", "wmma_cp_async_double_buffered", gemm_07_wmma_cp_async_double_buffered},
};

}  // namespace hg::cuda::gemm
