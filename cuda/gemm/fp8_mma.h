#pragma once
// Rung 09 of the GEMM ladder: FP8 on the tensor cores with mma.sync (cuda/gemm/09_mma_fp8.cu).
//
//   C (M, N) F32 = scale · A (M, K) · Bᵀ      A and B E4M3 codes, B stored (N, K): "TN"
//
// The FP8 tensor-core instruction exists only from sm_89 (Ada) and sm_90 (Hopper) on, and WMMA
// has no FP8 fragments, so this rung speaks PTX: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32.
// Its CPU reference is hg::fp8::gemm_tn (framework/fp8/fp8_gemm.h): exact products, F32 sums
// (the hardware's order of the sum, and its accumulator width, are not documented: compare
// with a tolerance, or exactly on small integers whose sums stay below 2^13).
#include <cstdint>

namespace hg::cuda::gemm {

// M a multiple of 16, N of 8, K of 32; A, B, C device pointers. scale multiplies every
// result (scale_inv_a · scale_inv_b of per-tensor scaling). Throws std::invalid_argument for
// other sizes and std::runtime_error on a GPU older than sm_89 (or a build without sm_89/90).
void gemm_09_mma_fp8_e4m3(int M, int N, int K, const uint8_t* A, const uint8_t* B, float* C, float scale);

}  // namespace hg::cuda::gemm
