// framework/cpu/gemm_kernel_avx512.cpp — the 8×32 AVX-512 micro-kernel.
//
// The AVX2 kernel (gemm_kernel_avx2.cpp) written for 512-bit registers: twice the lanes,
// twice the registers (32 zmm). Compiled with target("avx512f") on this function only.
//
//            b0 = b[k·32 + 0..15]    b1 = b[k·32 + 16..31]
//   a[0]  →  acc[0][0]               acc[0][1]
//    ...                                           16 accumulators: the 8×32 tile of C
//   a[7]  →  acc[7][0]               acc[7][1]
//
//   16 + 2 + 1 broadcast = 19 of 32 registers; per k: 2 loads + 8 broadcasts, 16 FMAs (16 ≥
//   4 cycles latency × 2 FMA ports, so the FMA units never wait). A 12×32 tile (24
//   accumulators) runs as fast on a square product, but MR = 8 divides the layer widths
//   networks use (32, 64, 128, ...): M = 64 with MR = 12 computes 72 rows, 11% wasted.
//   The loops over r are fully unrolled, so the compiler keeps acc[][] in registers.
#include "framework/cpu/gemm_kernel.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace hg::cpu {
namespace {

constexpr int MR = 8, NR = 32;

__attribute__((target("avx512f"))) void kernel_avx512(int64_t kc, const float* a, const float* b,
                                                      float* c, int64_t ldc, float alpha,
                                                      float beta) {
  // Prefetch the C tile (rarely in cache) so it arrives during the k loop; see the AVX2 kernel.
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + 16), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + NR - 1), _MM_HINT_T0);
  }
  __m512 acc[MR][2];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);  // 64-byte aligned
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 ar = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
    a += MR;
    b += NR;
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    float* cr = c + r * ldc;
    __m512 lo = _mm512_mul_ps(va, acc[r][0]), hi = _mm512_mul_ps(va, acc[r][1]);
    if (beta != 0.f) {
      lo = _mm512_fmadd_ps(vb, _mm512_loadu_ps(cr), lo);
      hi = _mm512_fmadd_ps(vb, _mm512_loadu_ps(cr + 16), hi);
    }
    _mm512_storeu_ps(cr, lo);
    _mm512_storeu_ps(cr + 16, hi);
  }
}

}  // namespace

const MicroKernel& avx512_micro_kernel() {
  // Every AVX-512 CPU has AVX2 (gemm.cpp checks both), so the AVX2 transpose serves packing.
  static const MicroKernel k{"avx512", MR, NR, /*mc=*/192, /*kc=*/256, /*nc=*/4096, kernel_avx512,
                             transpose8_avx2};
  return k;
}

}  // namespace hg::cpu

#else
namespace hg::cpu {
const MicroKernel& avx512_micro_kernel() { return portable_micro_kernel(); }
}  // namespace hg::cpu
#endif
