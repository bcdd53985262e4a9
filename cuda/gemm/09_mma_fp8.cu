// Rung 09: FP8 on the tensor cores, through PTX. WMMA (rungs 05-08) has no FP8 fragments; the
// instruction is mma.sync.aligned.m16n8k32 with E4M3 operands and an F32 accumulator, on
// sm_89 and sm_90:
//
//     d (16x8, F32) = a (16x32, E4M3, row) · b (32x8, E4M3, col) + c (16x8, F32)
//
// Like rung 05, this is the simplest correct use, not a fast one: one warp per 16 x 8 tile of
// C, operands straight from global memory. Unlike WMMA, the fragment layout is documented
// (PTX ISA, "Matrix Fragments for mma.m16n8k32"): lane L, with g = L / 4 and t = L % 4, holds
//   a: 4 registers of 4 bytes   a0 = A[g][4t..4t+3]     a1 = A[g+8][4t..4t+3]
//                               a2 = A[g][16+4t..+3]    a3 = A[g+8][16+4t..+3]
//   b: 2 registers of 4 bytes   b0 = B[4t..4t+3][g]     b1 = B[16+4t..+3][g]      (k rows, n column)
//   c: 4 floats                 c0,c1 = C[g][2t, 2t+1]  c2,c3 = C[g+8][2t, 2t+1]
// Four consecutive k of A's row are four consecutive bytes of the row-major A; four
// consecutive k of B's column are four consecutive bytes of B stored (N, K) — the TN layout
// every FP8 GEMM takes — so each register is one aligned 32-bit load.
#include <stdexcept>
#include <string>

#include "cuda/gemm/fp8_mma.h"
#include "cuda/runtime/check.h"

namespace hg::cuda::gemm {

// Requires M % 16 == 0, N % 8 == 0, K % 32 == 0.
__global__ void mma_fp8_kernel(int M, int N, int K, const uint8_t* A, const uint8_t* B, float* C, float scale) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  const int warp = int((blockIdx.x * blockDim.x + threadIdx.x) / 32), lane = int(threadIdx.x % 32);
  const int tiles_n = N / 8, tm = warp / tiles_n, tn = warp % tiles_n;
  if (tm * 16 >= M) return;
  const int g = lane / 4, t = lane % 4;
  const uint8_t* a_lo = A + size_t(tm * 16 + g) * K + 4 * t;      // row g of the tile
  const uint8_t* a_hi = A + size_t(tm * 16 + g + 8) * K + 4 * t;  // row g + 8
  const uint8_t* b_col = B + size_t(tn * 8 + g) * K + 4 * t;      // column g of the tile
  float c[4] = {0, 0, 0, 0};
  for (int k = 0; k < K; k += 32) {
    const uint32_t a0 = *reinterpret_cast<const uint32_t*>(a_lo + k);
    const uint32_t a1 = *reinterpret_cast<const uint32_t*>(a_hi + k);
    const uint32_t a2 = *reinterpret_cast<const uint32_t*>(a_lo + k + 16);
    const uint32_t a3 = *reinterpret_cast<const uint32_t*>(a_hi + k + 16);
    const uint32_t b0 = *reinterpret_cast<const uint32_t*>(b_col + k);
    const uint32_t b1 = *reinterpret_cast<const uint32_t*>(b_col + k + 16);
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  for (int i = 0; i < 4; ++i) {
    const int row = tm * 16 + g + 8 * (i / 2), col = tn * 8 + 2 * t + (i % 2);
    C[size_t(row) * N + col] = c[i] * scale;  // the per-tensor scales, once, as an epilogue
  }
#endif
}

void gemm_09_mma_fp8_e4m3(int M, int N, int K, const uint8_t* A, const uint8_t* B, float* C, float scale) {
  if (M <= 0 || N <= 0 || K <= 0 || M % 16 || N % 8 || K % 32)
    throw std::invalid_argument("gemm_09_mma_fp8: needs M a multiple of 16, N of 8 and K of 32 (got " +
                                std::to_string(M) + ", " + std::to_string(N) + ", " + std::to_string(K) + ")");
  int device = 0, major = 0, minor = 0;
  HG_CUDA_CHECK(cudaGetDevice(&device));
  HG_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  HG_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (major * 10 + minor < 89)
    throw std::runtime_error("gemm_09_mma_fp8: FP8 tensor cores need sm_89 or later; this GPU is sm_" +
                             std::to_string(major * 10 + minor));
  const long long warps = (long long)(M / 16) * (N / 8);
  const int threads = 128;  // 4 warps a block, each its own tile
  const long long blocks = (warps * 32 + threads - 1) / threads;
  if (blocks > 2147483647LL) throw std::invalid_argument("gemm_09_mma_fp8: too many tiles for one grid");
  mma_fp8_kernel<<<unsigned(blocks), threads>>>(M, N, K, A, B, C, scale);
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda::gemm
