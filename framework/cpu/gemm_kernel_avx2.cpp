// framework/cpu/gemm_kernel_avx2.cpp — the 6×16 AVX2+FMA micro-kernel.
//
// Compiled with __attribute__((target("avx2,fma"))) on this function only, so the library
// still runs on a CPU without AVX2: gemm.cpp calls it only after __builtin_cpu_supports said
// yes. No global -march flag.
//
// Register picture (16 ymm registers, 8 floats each):
//
//            b0 = b[k·16 + 0..7]     b1 = b[k·16 + 8..15]      ← 2 loads per k
//   a[0] →   c00                     c01
//   a[1] →   c10                     c11
//   a[2] →   c20                     c21       12 accumulators: the 6×16 tile of C
//   a[3] →   c30                     c31
//   a[4] →   c40                     c41
//   a[5] →   c50                     c51
//   ↑ 6 broadcasts per k (one register, reused)
//
//   12 + 2 + 1 = 15 of 16 registers. Per k: 2 loads + 6 broadcasts feed 12 FMAs = 96
//   multiply-adds (192 flops). An FMA has 4 cycles latency and 2 issue ports: 8 independent
//   chains keep them busy, 12 is comfortably more.
//
//   `bench_sgemm --threads 1` at n = 256 (all in cache) shows ~113 GFLOP/s on the machine this
//   was written on: close to one core's AVX2 peak (2 ports × 8 lanes × 2 flops × clock). The
//   AVX-512 kernel doubles the lanes: ~190.
//
// Also here: transpose8_avx2, the 8×8 register transpose that packing uses (gemm_pack.h).
#include "framework/cpu/gemm_kernel.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace hg::cpu {
namespace {

constexpr int MR = 6, NR = 16;

__attribute__((target("avx2,fma"))) void kernel_avx2(int64_t kc, const float* a, const float* b,
                                                     float* c, int64_t ldc, float alpha,
                                                     float beta) {
  // The C tile is needed only after the k loop, but it is rarely in cache (C is walked tile
  // by tile, not sequentially): ask for its cache lines now so they arrive during the loop.
  for (int r = 0; r < MR; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + NR - 1), _MM_HINT_T0);
  }
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);  // packed: 32-byte aligned
    __m256 ar;
    ar = _mm256_broadcast_ss(a + 0); c00 = _mm256_fmadd_ps(ar, b0, c00); c01 = _mm256_fmadd_ps(ar, b1, c01);
    ar = _mm256_broadcast_ss(a + 1); c10 = _mm256_fmadd_ps(ar, b0, c10); c11 = _mm256_fmadd_ps(ar, b1, c11);
    ar = _mm256_broadcast_ss(a + 2); c20 = _mm256_fmadd_ps(ar, b0, c20); c21 = _mm256_fmadd_ps(ar, b1, c21);
    ar = _mm256_broadcast_ss(a + 3); c30 = _mm256_fmadd_ps(ar, b0, c30); c31 = _mm256_fmadd_ps(ar, b1, c31);
    ar = _mm256_broadcast_ss(a + 4); c40 = _mm256_fmadd_ps(ar, b0, c40); c41 = _mm256_fmadd_ps(ar, b1, c41);
    ar = _mm256_broadcast_ss(a + 5); c50 = _mm256_fmadd_ps(ar, b0, c50); c51 = _mm256_fmadd_ps(ar, b1, c51);
    a += MR;
    b += NR;
  }
  // C = alpha·AB + beta·C, one row (two registers) at a time; C is unaligned in general.
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  const __m256 rows[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int r = 0; r < MR; ++r) {
    float* cr = c + r * ldc;
    __m256 lo = _mm256_mul_ps(va, rows[r][0]), hi = _mm256_mul_ps(va, rows[r][1]);
    if (beta != 0.f) {
      lo = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr), lo);
      hi = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8), hi);
    }
    _mm256_storeu_ps(cr, lo);
    _mm256_storeu_ps(cr + 8, hi);
  }
}

}  // namespace

// Packing helper: 8 rows × 8 columns loaded into 8 registers, transposed in three rounds of
// shuffles (pairs of floats, then quads, then 128-bit halves), stored as 8 columns.
__attribute__((target("avx2"))) void transpose8_avx2(const float* src, int64_t ld, int64_t kc8,
                                                     float* out, int width) {
  for (int64_t k = 0; k < kc8; k += 8) {
    const __m256 r0 = _mm256_loadu_ps(src + 0 * ld + k), r1 = _mm256_loadu_ps(src + 1 * ld + k);
    const __m256 r2 = _mm256_loadu_ps(src + 2 * ld + k), r3 = _mm256_loadu_ps(src + 3 * ld + k);
    const __m256 r4 = _mm256_loadu_ps(src + 4 * ld + k), r5 = _mm256_loadu_ps(src + 5 * ld + k);
    const __m256 r6 = _mm256_loadu_ps(src + 6 * ld + k), r7 = _mm256_loadu_ps(src + 7 * ld + k);
    // t0 = r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5]   (and so on)
    const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    const __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    const __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    // s0 = r0[0] r1[0] r2[0] r3[0] | r0[4] r1[4] r2[4] r3[4]   (column 0 | column 4, rows 0-3)
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
    const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    // column j = low halves (j < 4) or high halves (j ≥ 4) of rows 0-3 and rows 4-7
    float* o = out + k * width;
    _mm256_storeu_ps(o + 0 * width, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(o + 1 * width, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(o + 2 * width, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(o + 3 * width, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(o + 4 * width, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(o + 5 * width, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(o + 6 * width, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(o + 7 * width, _mm256_permute2f128_ps(s3, s7, 0x31));
  }
}

const MicroKernel& avx2_micro_kernel() {
  static const MicroKernel k{"avx2+fma", MR, NR, /*mc=*/144, /*kc=*/256, /*nc=*/4096, kernel_avx2,
                             transpose8_avx2};
  return k;
}

}  // namespace hg::cpu

#else  // not x86: the kernel does not exist; gemm.cpp never selects it.
namespace hg::cpu {
const MicroKernel& avx2_micro_kernel() { return portable_micro_kernel(); }
void transpose8_avx2(const float*, int64_t, int64_t, float*, int) {}
}  // namespace hg::cpu
#endif
