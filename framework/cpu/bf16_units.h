#pragma once
// framework/cpu/bf16_units.h — what the CPU's BF16 matrix units compute, bit for bit.
//
// Two x86 instructions multiply BF16 and add in F32, the numerics of a tensor core:
//
//   VDPBF16PS  AVX512_BF16 (Intel Cooper Lake, Sapphire Rapids and later; AMD Zen 4 and later)
//              16 F32 lanes, each += the dot product of one pair of BF16 from each source.
//   TDPBF16PS  AMX-BF16 (Intel Sapphire Rapids and later)
//              a 16×16 F32 tile += a 16×32 BF16 tile · a 32×16 BF16 tile (stored as 16 rows
//              of pairs: the "VNNI" layout), 16,384 FLOP in one instruction.
//
// Intel's manual says the units do "FP32 FMA with DAZ=FTZ=1, RNE", but not in what order, and
// the order decides the rounding. What follows was measured on an Intel Xeon (Sapphire Rapids,
// 2026-12-03), by running both instructions on random operands (exponents spread over ±2,
// ±10, ±30 around 1, around the underflow threshold 2^-126 and near the overflow, with 0-10%
// zeros, subnormals, infinities and NaNs) and comparing with candidate orders: the rules
// below agreed on all of 35.8 million AMX results and 2.2 million VDPBF16PS lanes. The unit
// tests (tests/unit/test_bf16_units.cpp) run the same comparison on every CPU that has a unit.
//
// One FMA of the units, unit_fma(acc, a, b) = acc + a·b:
//   - subnormal inputs are read as zero of their sign (DAZ): 2^-133 · 2^100 = 0, not 2^-33
//   - a·b is exact (8-bit significands), and acc + a·b is rounded once, to nearest even
//   - a result tiny after rounding (below 2^-126 at 24-bit precision with an unbounded
//     exponent) becomes a zero of its sign (FTZ): 2^-126 − 3·2^-152 gives 0 (IEEE's gradual
//     underflow would give 2^-126, and a subnormal for 2^-125 − 1.5·2^-126)
//   - NaN: a's if a is a NaN, else b's, else acc's, made quiet; an invalid operation (∞·0,
//     ∞ − ∞) gives x86's default NaN, 0xFFC00000.
//
// VDPBF16PS, lane i:   acc = unit_fma(acc, a[2i+1], b[2i+1]);  acc = unit_fma(acc, a[2i], b[2i])
//   the odd (upper) element of the pair first, as the manual's pseudocode writes it.
//
// TDPBF16PS, element (m, n) of C, one instruction (32 BF16 of K: 16 pairs p):
//   e = +0, o = +0
//   for p in 0..15:  e = unit_fma(e, a[2p], b[2p]);  o = unit_fma(o, a[2p+1], b[2p+1])
//   c = unit_add(c, unit_add(e, o))              (NaN: c's before e's before o's)
//   The even and the odd products run as two chains from zero, and only their sum meets C.
//   Adding every product into C in turn (the pseudocode of older manuals) disagreed with the
//   hardware on 58% of the results, and an exact sum rounded once on 53%: 1 + 2^-24 + 2^-24
//   gives 1 one product at a time but 1 + 2^-23 on AMX, whose chains add 2^-24 + 2^-24 first.
//
// Compared with gemm_bf16's F32 path (BF16 widened to F32, then the FP32 kernels), a unit
// gives the same exact products and different roundings of the sums, and it flushes what
// lies below 2^-126: a gradient that small is zero on the unit and kept on the F32 path.
#include <cstdint>

#include "framework/cpu/gemm.h"

namespace hg::cpu {

// The two operations of the units above, on F32 values (a BF16 value is a float whose
// lower 16 bits are zero).
float unit_fma(float acc, float a, float b);  // acc + a·b
float unit_add(float x, float y);             // x + y; NaN: x's before y's

// C = alpha·op(A)·op(B) + beta·C, computed one scalar unit operation at a time in exactly
// the order the kernel of `unit` (GemmKernel::Avx512Bf16 or GemmKernel::Amx) adds:
//   Avx512Bf16  (gemm_bf16_avx512bf16.cpp)  one chain per element over the pairs of K, odd first
//   Amx         (gemm_bf16_amx.cpp)         per 32 of K, the two chains, then into the element
// K is cut into pairs (and, for AMX, into 32s) from k = 0; a missing last element is a +0.
// Every element starts from +0, and C = bf16_epilogue(AB, alpha, beta, C), as in gemm_bf16.
// Slow (one scalar operation at a time): for the tests and chapter 05.
void gemm_bf16_emulated(GemmKernel unit, bool trans_a, bool trans_b, int64_t M, int64_t N,
                        int64_t K, float alpha, const hg::bfloat16* A, int64_t lda,
                        const hg::bfloat16* B, int64_t ldb, float beta, float* C, int64_t ldc);

// How a unit's sum AB becomes C: alpha·AB + beta·C in plain F32 (beta = 0: C is not read, as
// in BLAS). With alpha = 1 and beta = 0, the engine's case, it is AB itself, bit for bit: the
// kernels then accumulate straight into C.
inline float bf16_epilogue(float ab, float alpha, float beta, float c) {
  const float scaled = alpha * ab;
  return beta == 0.f ? scaled : scaled + beta * c;
}

}  // namespace hg::cpu
