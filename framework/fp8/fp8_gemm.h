#pragma once
// The FP8 GEMM, emulated on the CPU: what a Hopper/Ada tensor core computes, bit for bit
// up to the order of the sum.
//
//   C (M, N) = A (M, K) · Bᵀ     A and B FP8, both stored K-contiguous: B is (N, K)
//
// The "TN" layout is the only one FP8 tensor cores take (cuBLASLt's FP8 GEMM requires it):
// a GEMM that needs Bᵀ's other layout quantizes the transpose instead (framework/fp8/linear).
//
// Why it can be exact: two FP8 values have 4-bit (E4M3) or 3-bit (E5M2) significands, so
// their product has at most 8 significant bits and an exponent well inside F32's range:
// every product is exact in F32. What the hardware then does with the sum is the question.
//
//   Accumulate::F32        every product added to an F32 accumulator (round to nearest
//                          even): the tensor core as documented for F16/BF16.
//   Accumulate::Limited    an accumulator that keeps only `bits` significant bits (14:
//                          what DeepSeek-V3 measured on H800 FP8 tensor cores, "around 14
//                          bits"). Each addition is aligned to the accumulator and the bits
//                          below its last kept bit are dropped (rounded toward zero), so the
//                          error grows with K.
//   Accumulate::Promoted   DeepSeek-V3's fix: the limited accumulator runs for `promote_every`
//                          (128) elements of K, then its partial sum is multiplied by the
//                          scales and added to an F32 accumulator on the CUDA cores, and the
//                          limited one starts again from zero.
//
// Scales: the sum is cut into segments along K where a scale changes (a 1×128 tile, a
// 128×128 block, an MX block of 32) and, in Promoted mode, every promote_every elements.
// Each segment's partial sum is multiplied by scale_inv_a(m, segment) · scale_inv_b(n,
// segment) and added to the F32 result. A per-tensor scale makes K one segment, scaled once
// at the end: the cuBLASLt epilogue.
#include <cstdint>

#include "framework/fp8/fp8_tensor.h"

namespace hg::fp8 {

enum class Accumulate { F32, Limited, Promoted };

struct Accumulator {
  Accumulate mode = Accumulate::F32;
  int bits = 14;             // Limited, Promoted: significant bits kept by the accumulator
  int promote_every = 128;   // Promoted: elements of K between promotions to F32
};

// x with only its top `bits` significant bits (1..53), the rest dropped: round toward zero.
double keep_significant_bits(double x, int bits);

// C (M, N) F32 = A (M, K) · Bᵀ, B stored (N, K). Throws std::invalid_argument when the K's
// differ or a scale tile does not fit the segments (tiles along K must divide each other and
// promote_every). Accumulate::F32 with segments of 16 or more runs on the F32 GEMM
// (framework/cpu/gemm.h) over the decoded values: the products are exact, so only the order
// of the sum differs from the loop below.
Tensor gemm_tn(const Fp8Tensor& a, const Fp8Tensor& b, const Accumulator& acc = {});

// The same with the plain loop for every mode: one element after the other along K. The
// reference gemm_tn is tested against, and what Limited and Promoted always use.
Tensor gemm_tn_reference(const Fp8Tensor& a, const Fp8Tensor& b, const Accumulator& acc = {});

}  // namespace hg::fp8
