#pragma once
// Rung 09 of the GEMM ladder: FP8 on the tensor cores with mma.sync (cuda/gemm/09_mma_fp8.cu).
//
//   C (M, N) F32 = scale · A (M, K) · Bᵀ      A and B FP8 codes, B stored (N, K): "TN"
//
// TA and TB are cuda_fp8.h's one-byte types, in any of the four pairs:
//   __nv_fp8_e4m3   E4M3: 4 exponent bits, 3 mantissa bits, max 448     (weights, activations)
//   __nv_fp8_e5m2   E5M2: 5 exponent bits, 2 mantissa bits, max 57344   (gradients)
// Only the bytes are read: any uint8_t buffer of codes may be passed with a reinterpret_cast.
//
// The FP8 tensor-core instruction exists only from sm_89 (Ada) and sm_90 (Hopper) on, and WMMA
// has no FP8 fragments, so this rung speaks PTX: mma.sync.aligned.m16n8k32.row.col.f32.<a>.<b>.f32.
// Its CPU reference is hg::fp8::gemm_tn (framework/fp8/fp8_gemm.h): exact products, F32 sums
// (the hardware's order of the sum, and its accumulator width, are not documented: compare
// with a tolerance, or exactly on small integers whose sums stay within 2^14). Its library
// reference is cuBLASLt's FP8 GEMM (cuda/gemm/cublaslt_fp8.h).
#include <cuda_fp8.h>

#include <cstdint>

namespace hg::cuda::gemm {

// M a multiple of 16, N of 8, K of 32; A, B, C device pointers, A and B 4-byte aligned (each
// lane loads four codes at once). scale multiplies every result (scale_inv_a · scale_inv_b of
// per-tensor scaling). Throws std::invalid_argument for other sizes or a misaligned A or B
// (before any CUDA call) and std::runtime_error on a GPU older than sm_89. Runs on the default stream and
// returns without waiting. Instantiated for the four (TA, TB) pairs.
template <class TA, class TB>
void gemm_09_mma_fp8(int M, int N, int K, const TA* A, const TB* B, float* C, float scale);

}  // namespace hg::cuda::gemm
