#pragma once
// tests/bench/peak.h — the measured peak of each arithmetic unit of this CPU, in GFLOP/s:
// the figure "% of peak" in every GEMM benchmark divides by.
//
// Each peak is a loop that keeps its operands in registers (no memory traffic at all), with
// enough independent accumulators to hide the instruction's latency, run on `threads`
// threads at once (one per core: ./lab bench runs one thread per core). What the datasheet
// promises does not matter here; what this machine, at its clock and under its hypervisor,
// does, does.
//
//   unit          instruction                 FLOP per instruction
//   fp32_fma      VFMADD231PS zmm (or ymm)    32 (16) — 16 (8) lanes × multiply and add
//   vdpbf16ps     VDPBF16PS zmm               64      — 16 lanes × 2 pairs × 2
//   amx_bf16      TDPBF16PS tile              16,384  — 16 × 16 × 32 × 2
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "framework/cpu/gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hg::bench {

enum class Unit { Fp32Fma, Vdpbf16ps, AmxBf16 };

inline const char* unit_name(Unit u) {
  switch (u) {
    case Unit::Fp32Fma: return "fp32_fma";
    case Unit::Vdpbf16ps: return "vdpbf16ps";
    case Unit::AmxBf16: return "amx_bf16";
  }
  return "?";
}

inline bool unit_present(Unit u) {
  switch (u) {
    case Unit::Fp32Fma: return hg::cpu::gemm_kernel_supported(hg::cpu::GemmKernel::Avx2);
    case Unit::Vdpbf16ps: return hg::cpu::gemm_kernel_supported(hg::cpu::GemmKernel::Avx512Bf16);
    case Unit::AmxBf16: return hg::cpu::gemm_kernel_supported(hg::cpu::GemmKernel::Amx);
  }
  return false;
}

#if defined(__x86_64__)
// Each loop body: `reps` rounds of independent instructions; returns FLOP done.
__attribute__((target("avx512f"))) inline double loop_fma512(int64_t reps) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(a, acc[i], b);
  for (int i = 0; i < 12; ++i) asm volatile("" ::"v"(acc[i]));  // the results are used
  return double(reps) * 12 * 32;
}
__attribute__((target("avx2,fma"))) inline double loop_fma256(int64_t reps) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(float(i));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(a, acc[i], b);
  for (int i = 0; i < 12; ++i) asm volatile("" ::"x"(acc[i]));
  return double(reps) * 12 * 16;
}
__attribute__((target("avx512f,avx512bf16"))) inline double loop_vdpbf16ps(int64_t reps) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(float(i));
  const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80), b = (__m512bh)_mm512_set1_epi32(0x3a803a80);
  for (int64_t r = 0; r < reps; ++r)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  for (int i = 0; i < 12; ++i) asm volatile("" ::"v"(acc[i]));
  return double(reps) * 12 * 64;
}
__attribute__((target("amx-tile,amx-bf16"))) inline double loop_tdpbf16ps(int64_t reps) {
  struct alignas(64) {
    uint8_t palette = 1, start = 0, reserved[14] = {};
    uint16_t bytes_per_row[16] = {};
    uint8_t rows[16] = {};
  } config;
  for (int t = 0; t < 8; ++t) config.bytes_per_row[t] = 64, config.rows[t] = 16;
  asm volatile("" : : "r"(&config) : "memory");  // keeps the stores: see gemm_bf16_amx.cpp
  _tile_loadconfig(&config);
  for (int64_t r = 0; r < reps; ++r) {  // 4 accumulating tiles, as the GEMM's 2×2 block
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_release();
  return double(reps) * 4 * 16384;
}
#endif

// GFLOP/s of `unit` with `threads` threads running the loop at once: the best of 5 rounds
// of about 0.1 s each; 0 when the CPU lacks it.
inline double measure_peak(Unit u, int threads) {
#if defined(__x86_64__)
  if (!unit_present(u)) return 0;
  const bool zmm = hg::cpu::gemm_kernel_supported(hg::cpu::GemmKernel::Avx512);
  auto body = [&](int64_t reps) {
    switch (u) {
      case Unit::Fp32Fma: return zmm ? loop_fma512(reps) : loop_fma256(reps);
      case Unit::Vdpbf16ps: return loop_vdpbf16ps(reps);
      case Unit::AmxBf16: return loop_tdpbf16ps(reps);
    }
    return 0.0;
  };
  auto round = [&](int64_t reps, double* seconds) {
    double flops = 0;
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    flops += body(reps);
    *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return flops / *seconds * 1e-9;
  };
  // The length: double the repetitions until a round takes 20 ms (a first round also pays for
  // waking the threads, and a round of microseconds measures that instead), then scale to 0.1 s.
  double s = 0;
  int64_t reps = 1000;
  for (round(reps, &s); s < 0.02; round(reps, &s)) reps *= 2;
  reps = std::max<int64_t>(reps, int64_t(double(reps) * 0.1 / s));
  double best = 0;
  for (int r = 0; r < 5; ++r) best = std::max(best, round(reps, &s));
  return best;
#else
  (void)u, (void)threads;
  return 0;
#endif
}

}  // namespace hg::bench
