// framework/cpu/convert_kernel.cpp — see convert_kernel.h.
//
// Sections: 1. portable  2. f16c (AVX2 + F16C, 8 lanes)  3. avx512 (16 lanes)
//           4. avx512_bf16 (the BF16 rounding instruction, and where it is not IEEE)
//           5. choosing a kernel
//
// The BF16 rounding below is fast_convert.h's float_to_bf16 lane by lane:
//   rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16          (u: the float's bits)
//   NaN (|u| > 0x7F800000): (u >> 16) | 0x40 instead         (keep the payload, set the quiet bit)
// and BF16 -> F32 is  u = b << 16, with the quiet bit 0x00400000 set on a NaN.
#include "framework/cpu/convert_kernel.h"

#include <cstring>

#include "framework/dtype/fast_convert.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define HG_X86 1
#else
#define HG_X86 0
#endif

namespace hg::cpu {
namespace {

// ---- 1. portable: fast_convert.h one value at a time ------------------------------------
void f32_to_f16_portable(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fast::float_to_half(src[i]);
}
void f16_to_f32_portable(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fast::half_to_float(src[i]);
}
void f32_to_bf16_portable(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fast::float_to_bf16(src[i]);
}
void bf16_to_f32_portable(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = fast::bf16_to_float(src[i]);
}

const ConvertKernel kPortable{"portable", f32_to_f16_portable, f16_to_f32_portable,
                              f32_to_bf16_portable, bf16_to_f32_portable};

#if HG_X86
// ---- 2. f16c: 8 lanes (ymm) --------------------------------------------------------------
// Each function converts exactly 8 values; run8 walks a block with it. The last 1..7 values
// go through an 8-lane buffer, so that short runs (a 6-wide GEMM sliver) use the instruction
// too.
#define HG_F16C __attribute__((target("avx2,f16c")))

// vcvtps2ph with the rounding in the instruction (nearest even), not taken from MXCSR.
HG_F16C inline void f32_to_f16_8(const float* src, uint16_t* dst) {
  const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), h);
}
HG_F16C inline void f16_to_f32_8(const uint16_t* src, float* dst) {  // exact; NaN comes out quiet
  _mm256_storeu_ps(dst, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src))));
}
HG_F16C inline void f32_to_bf16_8(const float* src, uint16_t* dst) {
  const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src));
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), odd), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)),
                                         _mm256_set1_epi32(0x7F800000));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);  // lanes: 0 .. 0xFFFF
  // 8 × 32 bits -> 8 × 16 bits (packus saturates nothing here: every lane fits)
  const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), h);
}
HG_F16C inline void bf16_to_f32_8(const uint16_t* src, float* dst) {
  const __m256i b = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
  const __m256i u = _mm256_slli_epi32(b, 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF)),
                                         _mm256_set1_epi32(0x7F800000));
  const __m256i quiet_bit = _mm256_and_si256(nan, _mm256_set1_epi32(0x00400000));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_or_si256(u, quiet_bit));
}

template <class S, class D, void (*Convert8)(const S*, D*)>
HG_F16C void run8(const S* src, D* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) Convert8(src + i, dst + i);
  if (i < n) {
    S in[8] = {};
    D out[8];
    std::memcpy(in, src + i, size_t(n - i) * sizeof(S));
    Convert8(in, out);
    std::memcpy(dst + i, out, size_t(n - i) * sizeof(D));
  }
}

const ConvertKernel kF16C{"f16c", run8<float, uint16_t, f32_to_f16_8>,
                          run8<uint16_t, float, f16_to_f32_8>, run8<float, uint16_t, f32_to_bf16_8>,
                          run8<uint16_t, float, bf16_to_f32_8>};

// ---- 3. avx512: 16 lanes (zmm) -------------------------------------------------------------
// (GCC 12's AVX-512 headers make an "undefined" register as `__m512i __Y = __Y;` and its own
// -Wmaybe-uninitialized then reports that line — GCC bug 105593, fixed in GCC 13. Silenced
// for sections 3 and 4 only.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// The tail is a masked load and store: lanes past n are neither read nor written.
#define HG_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

HG_AVX512 inline __mmask16 lanes_left(int64_t left) {
  return left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
}

HG_AVX512 void f32_to_f16_avx512(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes_left(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_mask_storeu_epi16(dst + i, m, h);
  }
}
HG_AVX512 void f16_to_f32_avx512(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes_left(n - i);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, src + i)));
  }
}
// 16 floats (as bits) -> 16 bfloat16 in the low halves of the lanes.
HG_AVX512 inline __m512i bf16_round16(__m512i u) {
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), odd), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_blend_epi32(nan, rounded, quiet);
}
HG_AVX512 void f32_to_bf16_avx512(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes_left(n - i);
    const __m512i u = _mm512_maskz_loadu_epi32(m, src + i);
    _mm512_mask_cvtepi32_storeu_epi16(dst + i, m, bf16_round16(u));  // vpmovdw: 32 -> 16 bits
  }
}
HG_AVX512 void bf16_to_f32_avx512(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes_left(n - i);
    const __m512i u = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, src + i)), 16);
    const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7FFFFFFF)),
                                                  _mm512_set1_epi32(0x7F800000));
    _mm512_mask_storeu_epi32(dst + i, m, _mm512_mask_or_epi32(u, nan, u, _mm512_set1_epi32(0x00400000)));
  }
}

const ConvertKernel kAvx512{"avx512", f32_to_f16_avx512, f16_to_f32_avx512, f32_to_bf16_avx512,
                            bf16_to_f32_avx512};

// ---- 4. avx512_bf16: vcvtneps2bf16 -----------------------------------------------------------
// The instruction rounds to nearest even and quiets a NaN exactly as IEEE (and hg::bfloat16)
// do, with one difference: it reads a subnormal input as zero, whatever MXCSR says (Intel
// SDM, VCVTNEPS2BF16). A float below 2^-126 has a BF16 neighbour that is not 0 — BF16 has
// FP32's exponent, so FP32's subnormals are BF16's too — so those lanes, rare in training,
// are redone with the integer rounding of section 3. tests/unit/test_convert_kernel.cpp
// checks every float, and shows the difference on the instruction alone.
#define HG_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

HG_AVX512_BF16 void f32_to_bf16_avx512_bf16(const float* src, uint16_t* dst, int64_t n) {
  const __m512i exponent = _mm512_set1_epi32(0x7F800000), mantissa = _mm512_set1_epi32(0x007FFFFF);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lanes_left(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(m, src + i);
    __m256i h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x));
    const __m512i u = _mm512_castps_si512(x);
    const __mmask16 subnormal =
        _mm512_testn_epi32_mask(u, exponent) & _mm512_test_epi32_mask(u, mantissa);
    if (subnormal) h = _mm256_mask_blend_epi16(subnormal, h, _mm512_cvtepi32_epi16(bf16_round16(u)));
    _mm256_mask_storeu_epi16(dst + i, m, h);
  }
}

const ConvertKernel kAvx512Bf16{"avx512_bf16", f32_to_f16_avx512, f16_to_f32_avx512,
                                f32_to_bf16_avx512_bf16, bf16_to_f32_avx512};
#pragma GCC diagnostic pop
#endif  // HG_X86

}  // namespace

// ---- 5. choosing a kernel ------------------------------------------------------------------
std::vector<const ConvertKernel*> supported_convert_kernels() {
  std::vector<const ConvertKernel*> kernels{&kPortable};
#if HG_X86
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) kernels.push_back(&kF16C);
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl")) {
    kernels.push_back(&kAvx512);
    if (__builtin_cpu_supports("avx512bf16")) kernels.push_back(&kAvx512Bf16);
  }
#endif
  return kernels;
}

const ConvertKernel& convert_kernel() {
  static const ConvertKernel* const best = supported_convert_kernels().back();  // the widest
  return *best;
}

}  // namespace hg::cpu
