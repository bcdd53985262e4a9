// framework/cpu/gemm_bf16_avx512bf16.cpp — BF16 GEMM with VDPBF16PS (AVX512_BF16).
//
// Sections: 1. the instruction  2. packing into pairs  3. the micro-kernel  4. one thread's rectangle
//
// ---- 1. The instruction -----------------------------------------------------------------------
//   VDPBF16PS zmm_acc, zmm_a, zmm_b      for each of the 16 F32 lanes i:
//       acc[i] += a.bf16[2i+1]·b.bf16[2i+1];  acc[i] += a.bf16[2i]·b.bf16[2i]
// Each 32-bit lane holds a *pair* of BF16 of K, so one instruction does 32 multiply-adds: as
// many as one FP32 FMA on twice the lanes. On a Sapphire Rapids core it issues half as often
// as an FP32 FMA, so its FLOP peak is about the FP32 one (`./lab bench peak`): what it gains
// is bytes — half the memory and cache traffic per operand — and the rounding of the unit
// (bf16_units.h), not FLOPs. On AMD Zen 4 the ratio differs; the benchmark says.
//
// The kernel is the FP32 AVX-512 kernel (gemm_kernel_avx512.cpp) with pairs for values:
//
//            b0 = pairs of 16 columns   b1 = the next 16
//   a[r] → acc[r][0]                    acc[r][1]        r = 0..7: 16 accumulators, 8×32 of C
//
//   per pair of K: 2 loads of B, 8 broadcasts of one A pair each (32 bits), 16 VDPBF16PS.
#include <algorithm>
#include <vector>

#include "framework/cpu/gemm_bf16_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace hg::cpu {
namespace {

constexpr int MR = 8, NR = 32;

// ---- 2. Packing into pairs ---------------------------------------------------------------------
// A sliver (MR rows from i0): ceil(kc/2) pairs, pair-major:
//   a[q·MR + r] = (op(A)(i0+r, p0+2q), op(A)(i0+r, p0+2q+1))  as one 32-bit word, low half first
// B sliver (NR columns from j0):
//   b[q·NR + c] = (op(B)(p0+2q, j0+c), op(B)(p0+2q+1, j0+c))
// +0 past the rows, columns or K of the block (K odd: the last pair's upper half).
uint32_t pair(uint16_t low, uint16_t high) { return uint32_t(low) | uint32_t(high) << 16; }

void pack_a_pairs(const MatrixView<uint16_t>& A, int64_t i0, int64_t p0, int64_t rows, int64_t kc,
                  uint32_t* a) {
  for (int64_t q = 0; q < (kc + 1) / 2; ++q, a += MR)
    for (int r = 0; r < MR; ++r) {
      const bool in = r < rows;
      const uint16_t lo = in ? *A.at(i0 + r, p0 + 2 * q) : 0;
      const uint16_t hi = in && 2 * q + 1 < kc ? *A.at(i0 + r, p0 + 2 * q + 1) : 0;
      a[r] = pair(lo, hi);
    }
}

void pack_b_pairs(const MatrixView<uint16_t>& B, int64_t p0, int64_t j0, int64_t kc, int64_t cols,
                  uint32_t* b) {
  for (int64_t q = 0; q < (kc + 1) / 2; ++q, b += NR)
    for (int c = 0; c < NR; ++c) {
      const bool in = c < cols;
      const uint16_t lo = in ? *B.at(p0 + 2 * q, j0 + c) : 0;
      const uint16_t hi = in && 2 * q + 1 < kc ? *B.at(p0 + 2 * q + 1, j0 + c) : 0;
      b[c] = pair(lo, hi);
    }
}

// ---- 3. The micro-kernel -----------------------------------------------------------------------
// C (8×32 at c) = [C +] Σ over `pairs` of a · b. `accumulate`: start from C (the previous K
// blocks), else from zero: each element's sum is one chain of VDPBF16PS over all of K.
__attribute__((target("avx512f,avx512bf16"))) void kernel_8x32(int64_t pairs, const uint32_t* a,
                                                                const uint32_t* b, float* c,
                                                                int64_t ldc, bool accumulate) {
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    acc[r][0] = accumulate ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    acc[r][1] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t q = 0; q < pairs; ++q, a += MR, b += NR) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 16);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(int(a[r]));  // one pair, in every lane
      acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
      acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_ps(c + r * ldc, acc[r][0]);
    _mm512_storeu_ps(c + r * ldc + 16, acc[r][1]);
  }
}

// Packed pairs, 64-byte aligned, per thread, kept between calls.
struct PairBuffer {
  std::vector<uint32_t> v;
  uint32_t* get(int64_t n) {
    if (int64_t(v.size()) < n + 16) v.resize(size_t(n + 16));
    const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
    return v.data() + ((64 - p % 64) % 64) / 4;
  }
};
thread_local PairBuffer t_pairs_a, t_pairs_b;

}  // namespace

// ---- 4. One thread's rectangle -----------------------------------------------------------------
// The five loops of gemm.cpp with pairs: KC = 512 values of K (256 pairs) makes a B sliver
// 256 · 32 · 4 B = 32 KB, which stays in L1 while the A slivers of an MC = 192 block pass.
// C accumulates in place across K blocks; ragged tiles go through an 8×32 scratch tile.
void avx512bf16_gemm_rectangle(const MatrixView<uint16_t>& A, const MatrixView<uint16_t>& B,
                               int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K, float* C,
                               int64_t ldc) {
  constexpr int64_t MC = 192, KC = 512, NC = 4096;
  const int64_t M = m1 - m0, N = n1 - n0;
  alignas(64) float edge[MR * NR];
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = std::min(NC, N - jc);
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = std::min(KC, K - pc), pairs = (kc + 1) / 2;
      uint32_t* Bp = t_pairs_b.get((nc + NR - 1) / NR * pairs * NR);
      for (int64_t s = 0; s < nc; s += NR)
        pack_b_pairs(B, pc, n0 + jc + s, kc, std::min<int64_t>(NR, nc - s), Bp + s / NR * pairs * NR);
      for (int64_t ic = 0; ic < M; ic += MC) {
        const int64_t mc = std::min(MC, M - ic);
        uint32_t* Ap = t_pairs_a.get((mc + MR - 1) / MR * pairs * MR);
        for (int64_t s = 0; s < mc; s += MR)
          pack_a_pairs(A, m0 + ic + s, pc, std::min<int64_t>(MR, mc - s), kc, Ap + s / MR * pairs * MR);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          const uint32_t* b = Bp + jr / NR * pairs * NR;
          const int64_t cols = std::min<int64_t>(NR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const uint32_t* a = Ap + ir / MR * pairs * MR;
            const int64_t rows = std::min<int64_t>(MR, mc - ir);
            float* c = C + (m0 + ic + ir) * ldc + (n0 + jc + jr);
            if (rows == MR && cols == NR) {
              kernel_8x32(pairs, a, b, c, ldc, pc > 0);
              continue;
            }
            for (int r = 0; r < MR; ++r)
              for (int j = 0; j < NR; ++j) edge[r * NR + j] = r < rows && j < cols && pc > 0 ? c[r * ldc + j] : 0.f;
            kernel_8x32(pairs, a, b, edge, NR, pc > 0);
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] = edge[r * NR + j];
          }
        }
      }
    }
  }
}

}  // namespace hg::cpu

#else
namespace hg::cpu {
void avx512bf16_gemm_rectangle(const MatrixView<uint16_t>&, const MatrixView<uint16_t>&, int64_t,
                               int64_t, int64_t, int64_t, int64_t, float*, int64_t) {}
}  // namespace hg::cpu
#endif
