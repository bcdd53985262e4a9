// framework/cpu/widen.cpp — see widen.h.
#include "framework/cpu/widen.h"

#include <cstring>

#include "framework/dtype/half.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hg::cpu {

#if defined(__x86_64__)
// Compiled for F16C with a target attribute only (the library runs on any x86-64), called
// only when cpu_has_f16c(). The tail of fewer than 8 values goes through an 8-lane buffer,
// so short rows (a 6-wide sliver of A) are converted by the instruction too.
__attribute__((target("avx,f16c"))) static void widen_f16_f16c(const uint16_t* src, int64_t n,
                                                              float* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  if (i < n) {
    uint16_t in[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float out[8];
    std::memcpy(in, src + i, size_t(n - i) * 2);
    _mm256_storeu_ps(out, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
    std::memcpy(dst + i, out, size_t(n - i) * 4);
  }
}
#endif

void widen_f16(const uint16_t* src, int64_t n, float* dst) {
#if defined(__x86_64__)
  if (cpu_has_f16c()) return widen_f16_f16c(src, n, dst);
#endif
  for (int64_t i = 0; i < n; ++i) dst[i] = half_bits_to_float(src[i]);
}

void widen_bf16(const uint16_t* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = uint32_t(src[i]) << 16;
    std::memcpy(dst + i, &bits, 4);  // the float with these bits
  }
}

}  // namespace hg::cpu
