// framework/cpu/bf16_units.cpp — the emulation of the BF16 units (bf16_units.h), in plain C++.
#include "framework/cpu/bf16_units.h"

#include <cfloat>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "framework/dtype/bfloat16.h"

namespace hg::cpu {

namespace {

float quiet(float nan) { return float_from_bits(float_bits(nan) | 0x00400000u); }
float denormals_are_zero(float x) {
  return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.f, x) : x;
}

}  // namespace

float unit_fma(float acc, float a, float b) {
  a = denormals_are_zero(a), b = denormals_are_zero(b), acc = denormals_are_zero(acc);
  if (std::isnan(a)) return quiet(a);
  if (std::isnan(b)) return quiet(b);
  if (std::isnan(acc)) return quiet(acc);
  float r = std::fmaf(a, b, acc);                  // one rounding, IEEE gradual underflow
  if (std::isnan(r)) return float_from_bits(0xFFC00000u);  // inf·0 or inf − inf
  // Flush to zero. std::fmaf rounded a tiny result on the subnormal grid; the unit decides
  // "tiny" after rounding to 24 bits as if the exponent had no floor. The two differ only
  // next to 2^-126, so redo those sums 2^24 higher, where nothing is subnormal: |r| ≤ 2^-126
  // needs both acc and a·b below 2^-101 (their sum's last bit is at least the smaller one's
  // last bit), so a, b·2^24 and acc·2^24 are all exact and far from overflow.
  if (r != 0.f && std::fabs(r) <= FLT_MIN) {
    const float high = std::fmaf(a, b * 0x1p24f, acc * 0x1p24f);
    r = std::fabs(high) < 0x1p-102f ? std::copysign(0.f, high) : high * 0x1p-24f;
  }
  return r;
}

// x + y is unit_fma(y, x, 1): the same rounding and flush, and x's NaN comes first.
float unit_add(float x, float y) { return unit_fma(y, x, 1.f); }

void gemm_bf16_emulated(GemmKernel unit, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                        float alpha, const hg::bfloat16* A, int64_t lda, const hg::bfloat16* B,
                        int64_t ldb, float beta, float* C, int64_t ldc) {
  if (unit != GemmKernel::Avx512Bf16 && unit != GemmKernel::Amx)
    throw std::invalid_argument("gemm_bf16_emulated: the unit is GemmKernel::Avx512Bf16 or GemmKernel::Amx");
  // op(A)(i, k) and op(B)(k, j) as floats; past K (the padding of the last pair or 32) a +0.
  auto a_at = [&](int64_t i, int64_t k) {
    return k >= K ? 0.f : float(ta ? A[k * lda + i] : A[i * lda + k]);
  };
  auto b_at = [&](int64_t k, int64_t j) {
    return k >= K ? 0.f : float(tb ? B[j * ldb + k] : B[k * ldb + j]);
  };
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float ab = 0.f;
      if (unit == GemmKernel::Avx512Bf16) {
        for (int64_t k = 0; k < K; k += 2) {  // one lane of VDPBF16PS per pair, odd first
          ab = unit_fma(ab, a_at(i, k + 1), b_at(k + 1, j));
          ab = unit_fma(ab, a_at(i, k), b_at(k, j));
        }
      } else {
        for (int64_t k0 = 0; k0 < K; k0 += 32) {  // one TDPBF16PS per 32 of K
          float even = 0.f, odd = 0.f;
          for (int64_t k = k0; k < k0 + 32; k += 2) {
            even = unit_fma(even, a_at(i, k), b_at(k, j));
            odd = unit_fma(odd, a_at(i, k + 1), b_at(k + 1, j));
          }
          ab = unit_add(ab, unit_add(even, odd));
        }
      }
      C[i * ldc + j] = bf16_epilogue(ab, alpha, beta, C[i * ldc + j]);
    }
}

}  // namespace hg::cpu
