// Rung 09: FP8 on the tensor cores, through PTX. WMMA (rungs 05-08) has no FP8 fragments; the
// instruction is mma.sync.aligned.m16n8k32 with 8-bit float operands and an F32 accumulator:
//
//     d (16x8, F32) = a (16x32, FP8, row) · b (32x8, FP8, col) + c (16x8, F32)
//
// Each operand is E4M3 or E5M2, independently (the PTX ISA's .f8type, one for a and one for
// b): E4M3·E4M3 is the forward GEMM of FP8 training, E5M2·E4M3 the backward GEMMs of the HYBRID
// recipe (the gradient in E5M2 times a weight or an input in E4M3, lessons/14_fp8), E4M3·E5M2
// the same with the operands swapped, and E5M2·E5M2 completes the set.
// The kernel is one template over the two operand types; the only line that depends on them
// is the instruction, chosen with `if constexpr` (mma_m16n8k32 below).
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
//
// Where the instruction runs: sm_89 (Ada: L4, L40, RTX 40xx) executes it on its FP8 tensor
// cores. sm_90 (Hopper: H100, H200) accepts it, but its FP8 tensor cores are reached only
// through the warp-group instruction wgmma (sm_90a); for mma.sync the compiler converts the
// FP8 operands to F16 and uses the F16 tensor cores (NVIDIA's answer in
// github.com/NVIDIA/cutlass/issues/1986). Same numbers (every FP8 value is exact in F16, and
// the sum is F32 either way), F16 speed at best: on a Hopper GPU this rung cannot beat the F16
// rungs. cuBLASLt's FP8 GEMM (cuda/gemm/cublaslt_fp8.h) uses wgmma there.
// tests/gpu/kernel_facts.sh counts the instructions nvcc makes of this file for both targets.
//
// This file is compiled for sm_89 and sm_90 only, whatever HG_CUDA_ARCHS says
// (cuda/CMakeLists.txt: the hg_cuda_fp8 object library); the launcher refuses an older GPU.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 890
#error "09_mma_fp8.cu needs sm_89 or later: cuda/CMakeLists.txt compiles it for 89 and 90 only"
#endif

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda/gemm/fp8_mma.h"
#include "cuda/gemm/layout.h"
#include "cuda/runtime/check.h"

namespace hg::cuda::gemm {

// One mma.sync: c += a · b, with the operand types in the instruction's name. A PTX string must
// be a literal, so each of the four pairs spells its own; HG_MMA_M16N8K32 only keeps the
// (identical) operand list out of the way.
#define HG_MMA_M16N8K32(ab)                                                                    \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." ab ".f32 "                            \
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"              \
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                               \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))

template <class TA, class TB>
__device__ void mma_m16n8k32(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  constexpr bool a_e4m3 = std::is_same_v<TA, __nv_fp8_e4m3>, b_e4m3 = std::is_same_v<TB, __nv_fp8_e4m3>;
  if constexpr (a_e4m3 && b_e4m3) HG_MMA_M16N8K32("e4m3.e4m3");
  else if constexpr (a_e4m3) HG_MMA_M16N8K32("e4m3.e5m2");
  else if constexpr (b_e4m3) HG_MMA_M16N8K32("e5m2.e4m3");
  else HG_MMA_M16N8K32("e5m2.e5m2");
}
#undef HG_MMA_M16N8K32

// Requires M % 16 == 0, N % 8 == 0, K % 32 == 0. A (M, K) and B (N, K) hold FP8 codes, one byte each.
template <class TA, class TB>
__global__ void mma_fp8_kernel(int M, int N, int K, const TA* A, const TB* B, float* C, float scale) {
  const Fp8Tile tile = rung09_tile(blockIdx.x, blockDim.x, threadIdx.x, N);  // cuda/gemm/layout.h
  if (tile.tm * 16 >= M) return;
  const int tm = int(tile.tm), tn = int(tile.tn), lane = int(threadIdx.x % 32);
  const int g = lane / 4, t = lane % 4;
  const auto* a_bytes = reinterpret_cast<const uint8_t*>(A);
  const auto* b_bytes = reinterpret_cast<const uint8_t*>(B);
  const uint8_t* a_lo = a_bytes + size_t(tm * 16 + g) * K + 4 * t;      // row g of the tile
  const uint8_t* a_hi = a_bytes + size_t(tm * 16 + g + 8) * K + 4 * t;  // row g + 8
  const uint8_t* b_col = b_bytes + size_t(tn * 8 + g) * K + 4 * t;      // column g of the tile
  float c[4] = {0, 0, 0, 0};
  for (int k = 0; k < K; k += 32) {
    const uint32_t a[4] = {*reinterpret_cast<const uint32_t*>(a_lo + k), *reinterpret_cast<const uint32_t*>(a_hi + k),
                           *reinterpret_cast<const uint32_t*>(a_lo + k + 16),
                           *reinterpret_cast<const uint32_t*>(a_hi + k + 16)};
    const uint32_t b[2] = {*reinterpret_cast<const uint32_t*>(b_col + k),
                           *reinterpret_cast<const uint32_t*>(b_col + k + 16)};
    mma_m16n8k32<TA, TB>(c, a, b);
  }
  for (int i = 0; i < 4; ++i) {
    const int row = tm * 16 + g + 8 * (i / 2), col = tn * 8 + 2 * t + (i % 2);
    C[size_t(row) * N + col] = c[i] * scale;  // the per-tensor scales, once, as an epilogue
  }
}

// Each lane reads four FP8 codes of a row of A (a column of B) with one 32-bit load. Every row
// starts at a multiple of K = 32k bytes from the first, so the first byte decides: a view that
// starts at an odd offset into a buffer would make every load misaligned, and the kernel fault.
static void require_4_byte_aligned(const void* p, const char* name) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  if (address % 4)
    throw std::invalid_argument(std::string("gemm_09_mma_fp8: ") + name + " starts at byte " +
                                std::to_string(address % 4) + " of a 4-byte word; it must be 4-byte aligned " +
                                "(each lane loads four FP8 codes at once): copy it, or take a view that " +
                                "starts at a multiple of 4 bytes");
}

template <class TA, class TB>
void gemm_09_mma_fp8(int M, int N, int K, const TA* A, const TB* B, float* C, float scale) {
  // The arguments first, before any CUDA call: a wrong one is refused the same way with or
  // without a GPU (tests/unit/test_cuda_gemm_layout.cpp checks it on the CPU).
  if (M <= 0 || N <= 0 || K <= 0 || M % 16 || N % 8 || K % 32)
    throw std::invalid_argument("gemm_09_mma_fp8: needs M a multiple of 16, N of 8 and K of 32 (got " +
                                std::to_string(M) + ", " + std::to_string(N) + ", " + std::to_string(K) + ")");
  require_4_byte_aligned(A, "A");
  require_4_byte_aligned(B, "B");
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
  mma_fp8_kernel<TA, TB><<<unsigned(blocks), threads>>>(M, N, K, A, B, C, scale);
  HG_CUDA_CHECK(cudaGetLastError());
}

template void gemm_09_mma_fp8<__nv_fp8_e4m3, __nv_fp8_e4m3>(int, int, int, const __nv_fp8_e4m3*,
                                                            const __nv_fp8_e4m3*, float*, float);
template void gemm_09_mma_fp8<__nv_fp8_e4m3, __nv_fp8_e5m2>(int, int, int, const __nv_fp8_e4m3*,
                                                            const __nv_fp8_e5m2*, float*, float);
template void gemm_09_mma_fp8<__nv_fp8_e5m2, __nv_fp8_e4m3>(int, int, int, const __nv_fp8_e5m2*,
                                                            const __nv_fp8_e4m3*, float*, float);
template void gemm_09_mma_fp8<__nv_fp8_e5m2, __nv_fp8_e5m2>(int, int, int, const __nv_fp8_e5m2*,
                                                            const __nv_fp8_e5m2*, float*, float);

}  // namespace hg::cuda::gemm
