// Array conversions float <-> half with the F16C fast path.
//
// F16C (x86, since 2012) converts 8 floats to halves in one instruction, rounding to
// nearest-even like the software path. The functions below are compiled for F16C with a
// target attribute (no global -march flag, so the library still runs on any x86-64) and
// chosen at run time with __builtin_cpu_supports. tests/unit/test_dtype_half.cpp checks
// that both paths give the same bits for every input.
#include "framework/dtype/half.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HG_HAVE_F16C_PATH 1
#else
#define HG_HAVE_F16C_PATH 0
#endif

namespace hg {

#if HG_HAVE_F16C_PATH
__attribute__((target("avx,f16c"))) static void float_to_half_f16c(const float* src, uint16_t* dst,
                                                                  size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(src + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);  // round to nearest-even
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

__attribute__((target("avx,f16c"))) static void half_to_float_f16c(const uint16_t* src, float* dst,
                                                                  size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));  // exact
  }
  for (; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}
#endif

bool cpu_has_f16c() {
#if HG_HAVE_F16C_PATH
  static const bool has = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
  return has;
#else
  return false;
#endif
}

void float_to_half_bits_n(const float* src, uint16_t* dst, size_t n) {
#if HG_HAVE_F16C_PATH
  if (cpu_has_f16c()) return float_to_half_f16c(src, dst, n);
#endif
  for (size_t i = 0; i < n; ++i) dst[i] = float_to_half_bits(src[i]);
}

void half_bits_to_float_n(const uint16_t* src, float* dst, size_t n) {
#if HG_HAVE_F16C_PATH
  if (cpu_has_f16c()) return half_to_float_f16c(src, dst, n);
#endif
  for (size_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}

}  // namespace hg
