// The CPU's BF16 matrix units (VDPBF16PS, AMX TDPBF16PS) against their emulation
// (framework/cpu/bf16_units.h), bit for bit, and gemm_bf16's choice of kernel.
//
//   1. the emulation's rules, case by case (every CPU: it is plain C++)
//   2. one instruction against the emulation: random operands of every kind
//   3. the GEMM kernels against gemm_bf16_emulated: shapes with ragged edges, all four
//      transposes, alpha/beta, several K blocks, 1 and 2 threads
//   4. which kernel gemm_bf16 runs, forced and automatic
// A case that needs a unit this CPU lacks exits 77 (reported as skipped, never passed).
#include <doctest/doctest.h>
#include <omp.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "framework/cpu/bf16_units.h"
#include "framework/cpu/gemm.h"
#include "framework/dtype/bfloat16.h"

using hg::bfloat16;
using hg::cpu::GemmKernel;
using hg::cpu::unit_add;
using hg::cpu::unit_fma;

namespace {

void skip(const std::string& why) {
  std::printf("SKIP: %s\n", why.c_str());
  std::fflush(stdout);
  std::exit(77);
}
void need(GemmKernel unit) {
  const std::string why = hg::cpu::gemm_kernel_unavailable_reason(unit);
  if (!why.empty()) skip(why);
}

uint32_t bits(float x) { return hg::float_bits(x); }
float from_bits(uint32_t u) { return hg::float_from_bits(u); }
float bf(uint16_t b) { return from_bits(uint32_t(b) << 16); }
std::string hex(float x) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", bits(x));
  return s;
}

// Random BF16 operands: exponents within ±spread of `center`, a share of zeros, subnormals,
// infinities and NaNs (quiet and signalling, both signs) given in per mille.
struct Operands {
  std::mt19937_64 rng;
  int center, spread, special_permille;
  uint16_t bf16() {
    static const uint16_t specials[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc1, 0xffc2, 0x7f81,
                                        0x0001, 0x807f, 0x0040, 0x7f7f, 0xff7f, 0x0080, 0x8080};
    if (int(rng() % 1000) < special_permille) return specials[rng() % 14];
    int e = center - spread + int(rng() % uint64_t(2 * spread + 1));
    e = std::max(-126, std::min(127, e));
    return uint16_t((rng() & 1) << 15 | uint32_t(e + 127) << 7 | (rng() & 0x7f));
  }
  float f32() {  // an accumulator: a full 24-bit significand
    static const uint32_t specials[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00333u,
                                        0x7f800333u, 0x00000001u, 0x807fffffu, 0x00800000u, 0x7f7fffffu};
    if (int(rng() % 1000) < special_permille) return from_bits(specials[rng() % 10]);
    int e = 2 * center - spread + int(rng() % uint64_t(2 * spread + 1));
    e = std::max(-126, std::min(127, e));
    return from_bits(uint32_t(rng() & 1) << 31 | uint32_t(e + 127) << 23 | uint32_t(rng() & 0x7fffff));
  }
};
// The distributions the header's claim was measured on: around 1, across the underflow
// threshold (products near 2^-126), near overflow, with and without special values.
const int kDistributions[][3] = {{0, 2, 0}, {0, 10, 0}, {0, 30, 100}, {-63, 4, 0}, {-62, 6, 50}, {60, 5, 30}};

}  // namespace

// ---- 1. The emulation's rules ------------------------------------------------------------------

TEST_CASE("unit_fma: subnormal inputs read as zero, tiny results flushed after rounding") {
  CHECK(unit_fma(0.f, bf(0x0001), 0x1p100f) == 0.f);                // 2^-133 · 2^100: the input is 0
  CHECK(bits(unit_fma(0x1p-140f, 1.f, 0.f)) == bits(0.f));          // a subnormal accumulator too
  CHECK(bits(unit_fma(0.f, 0x1p-65f, 0x1p-65f)) == bits(0.f));      // 2^-130 is tiny: +0
  CHECK(bits(unit_fma(0.f, -0x1p-65f, 0x1p-65f)) == bits(-0.f));    // a flushed zero keeps the sign
  // 2^-126 − 3·2^-152 rounds to 2^-126 on the subnormal grid (IEEE), but to 2^-126 − 2^-150
  // with 24 bits and no exponent floor: tiny, so 0. Ties to even keep 2^-126 − 2^-151 normal.
  CHECK(std::fmaf(0x1p-126f, -3 * 0x1p-26f, 0x1p-126f) == FLT_MIN);
  CHECK(unit_fma(0x1p-126f, 0x1p-126f, -3 * 0x1p-26f) == 0.f);
  CHECK(unit_fma(0x1p-126f, 0x1p-126f, -0x1p-25f) == FLT_MIN);
  CHECK(unit_fma(0x1p-125f, 0x1p-126f, -1.5f) == 0.f);              // 2^-127: a subnormal in IEEE
}

TEST_CASE("unit_fma: NaN from a, then b, then the accumulator, and invalid gives 0xFFC00000") {
  const float nan1 = from_bits(0x7fc10000u), nan2 = from_bits(0x7fc20000u), snan = from_bits(0x7f810000u);
  CHECK(bits(unit_fma(from_bits(0x7fc00333u), nan1, nan2)) == 0x7fc10000u);
  CHECK(bits(unit_fma(from_bits(0x7fc00333u), 1.f, nan2)) == 0x7fc20000u);
  CHECK(bits(unit_fma(from_bits(0x7fc00333u), 1.f, 1.f)) == 0x7fc00333u);
  CHECK(bits(unit_fma(0.f, snan, 1.f)) == 0x7fc10000u);             // made quiet
  CHECK(bits(unit_fma(0.f, INFINITY, 0.f)) == 0xffc00000u);
  CHECK(bits(unit_fma(INFINITY, -1.f, INFINITY)) == 0xffc00000u);
  CHECK(bits(unit_add(nan1, nan2)) == 0x7fc10000u);                 // x's NaN first
  CHECK(bits(unit_fma(FLT_MAX, 0x1p127f, 2.f)) == bits(INFINITY));  // overflow rounds to inf
}

TEST_CASE("gemm_bf16_emulated: VDPBF16PS adds one product at a time, AMX in two chains") {
  // op(A) = [1, 0, 0, 2^-24, 0, 2^-24] · op(B) = all ones: one chain gives 1 (each 2^-24 is
  // half an ULP of 1, a tie to even); AMX's odd chain adds 2^-24 + 2^-24 = 2^-23 first.
  const bfloat16 one = bfloat16(1.f), tiny = bfloat16(0x1p-24f), zero = bfloat16(0.f);
  const std::vector<bfloat16> a{one, zero, zero, tiny, zero, tiny}, b(6, one);
  float c = -7.f;
  hg::cpu::gemm_bf16_emulated(GemmKernel::Avx512Bf16, false, false, 1, 1, 6, 1.f, a.data(), 6, b.data(), 1, 0.f, &c, 1);
  CHECK(c == 1.f);
  hg::cpu::gemm_bf16_emulated(GemmKernel::Amx, false, false, 1, 1, 6, 1.f, a.data(), 6, b.data(), 1, 0.f, &c, 1);
  CHECK(c == 1.f + 0x1p-23f);
  CHECK_THROWS_WITH(hg::cpu::gemm_bf16_emulated(GemmKernel::Avx512, false, false, 1, 1, 6, 1.f, a.data(), 6,
                                                b.data(), 1, 0.f, &c, 1),
                    doctest::Contains("GemmKernel::Avx512Bf16 or GemmKernel::Amx"));
}

// ---- 2. One instruction against the emulation -------------------------------------------------
#if defined(__x86_64__)
namespace {

__attribute__((target("avx512f,avx512bf16"))) void vdpbf16ps(const float* acc, const uint16_t* a,
                                                             const uint16_t* b, float* out) {
  const __m512 r = _mm512_dpbf16_ps(_mm512_loadu_ps(acc), (__m512bh)_mm512_loadu_si512(a),
                                    (__m512bh)_mm512_loadu_si512(b));
  _mm512_storeu_ps(out, r);
}

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
// C (16×16 F32) += A (16×32 BF16) · B (16 pair rows × 16 columns × 2 BF16), one TDPBF16PS.
__attribute__((target("amx-tile,amx-bf16"))) void tdpbf16ps(float* c, const uint16_t* a, const uint16_t* b) {
  TileConfig config;
  for (int t = 0; t < 3; ++t) config.bytes_per_row[t] = 64, config.rows[t] = 16;
  asm volatile("" : : "r"(&config) : "memory");  // keeps the stores: see gemm_bf16_amx.cpp
  _tile_loadconfig(&config);
  _tile_loadd(0, c, 64);
  _tile_loadd(1, a, 64);
  _tile_loadd(2, b, 64);
  _tile_dpbf16ps(0, 1, 2);
  _tile_stored(0, c, 64);
  _tile_release();
}

}  // namespace

TEST_CASE("VDPBF16PS: one instruction equals the emulation on every kind of operand") {
  need(GemmKernel::Avx512Bf16);
  int64_t checked = 0;
  for (const auto& d : kDistributions) {
    Operands gen{std::mt19937_64(uint64_t(d[0] * 1000 + d[1])), d[0], d[1], d[2]};
    for (int rep = 0; rep < 4000; ++rep) {
      uint16_t a[32], b[32];
      float acc[16], out[16];
      for (int i = 0; i < 32; ++i) a[i] = gen.bf16(), b[i] = gen.bf16();
      for (float& x : acc) x = gen.f32();
      vdpbf16ps(acc, a, b, out);
      for (int i = 0; i < 16; ++i, ++checked) {
        const float want = unit_fma(unit_fma(acc[i], bf(a[2 * i + 1]), bf(b[2 * i + 1])), bf(a[2 * i]), bf(b[2 * i]));
        if (bits(out[i]) != bits(want))
          FAIL("lane ", i, ": hardware ", hex(out[i]), ", emulation ", hex(want), " (acc ", hex(acc[i]), ")");
      }
    }
  }
  MESSAGE(checked << " lanes equal, bit for bit");
}

TEST_CASE("TDPBF16PS: one instruction equals the emulation, and a wrong order would not") {
  need(GemmKernel::Amx);
  int64_t checked = 0, one_at_a_time_differs = 0;
  for (const auto& d : kDistributions) {
    Operands gen{std::mt19937_64(uint64_t(d[0] * 1000 + d[1] + 7)), d[0], d[1], d[2]};
    for (int rep = 0; rep < 150; ++rep) {
      alignas(64) uint16_t a[16][32], b[16][32];
      alignas(64) float c[16][16], c0[16][16];
      for (int r = 0; r < 16; ++r)
        for (int k = 0; k < 32; ++k) a[r][k] = gen.bf16(), b[r][k] = gen.bf16();
      for (int r = 0; r < 16; ++r)
        for (int n = 0; n < 16; ++n) c[r][n] = c0[r][n] = gen.f32();
      tdpbf16ps(&c[0][0], &a[0][0], &b[0][0]);
      for (int m = 0; m < 16; ++m)
        for (int n = 0; n < 16; ++n, ++checked) {
          float even = 0.f, odd = 0.f, seq = c0[m][n];  // b[p][2n + h]: pair row p, column n
          for (int p = 0; p < 16; ++p) {
            even = unit_fma(even, bf(a[m][2 * p]), bf(b[p][2 * n]));
            odd = unit_fma(odd, bf(a[m][2 * p + 1]), bf(b[p][2 * n + 1]));
            seq = unit_fma(unit_fma(seq, bf(a[m][2 * p]), bf(b[p][2 * n])), bf(a[m][2 * p + 1]), bf(b[p][2 * n + 1]));
          }
          const float want = unit_add(c0[m][n], unit_add(even, odd));
          if (bits(c[m][n]) != bits(want))
            FAIL("C(", m, ",", n, "): hardware ", hex(c[m][n]), ", emulation ", hex(want), " (C was ", hex(c0[m][n]), ")");
          one_at_a_time_differs += bits(c[m][n]) != bits(seq);
        }
    }
  }
  MESSAGE(checked << " results equal, bit for bit; adding the products one at a time (the older manual's "
                     "pseudocode) would differ on " << one_at_a_time_differs);
  CHECK(one_at_a_time_differs > checked / 10);  // the comparison can tell orders apart
}
#endif

// ---- 3. The GEMM kernels against gemm_bf16_emulated --------------------------------------------
namespace {

struct KernelGuard {
  ~KernelGuard() { hg::cpu::set_gemm_kernel(GemmKernel::Auto); }
};

// gemm_bf16 forced onto `unit` equals gemm_bf16_emulated(unit) bit for bit.
void check_kernel_equals_emulation(GemmKernel unit) {
  need(unit);
  KernelGuard guard;
  hg::cpu::set_gemm_kernel(unit);
  REQUIRE(hg::cpu::gemm_bf16_kernel() == unit);
  // ragged edges (not multiples of 8, 16, 32), K odd, K across two K blocks (512), a wide N
  const int64_t shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {33, 17, 64}, {40, 64, 31}, {64, 96, 1100}, {70, 300, 40}};
  const int threads_before = omp_get_max_threads();
  int64_t checked = 0;
  int trial = 0;
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    for (const auto& s : shapes)
      for (int t = 0; t < 4; ++t, ++trial) {
        const auto& d = kDistributions[trial % 6];
        Operands gen{std::mt19937_64(uint64_t(trial)), d[0], d[1], d[2] / 4};
        const int64_t M = s[0], N = s[1], K = s[2];
        const bool ta = t & 1, tb = t & 2;
        const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
        std::vector<bfloat16> A(size_t((ta ? K : M) * lda)), B(size_t((tb ? N : K) * ldb));
        for (auto& x : A) x = bfloat16::from_bits(gen.bf16());
        for (auto& x : B) x = bfloat16::from_bits(gen.bf16());
        std::vector<float> C(size_t(M * ldc));
        for (auto& x : C) x = gen.f32();
        // the engine's alpha = 1, beta = 0 (accumulating straight into C), and the general case
        for (int general = 0; general < 2; ++general) {
          const float alpha = general ? -0.75f : 1.f, beta = general ? 0.5f : 0.f;
          std::vector<float> got = C, want = C;
          hg::cpu::gemm_bf16(ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, got.data(), ldc);
          hg::cpu::gemm_bf16_emulated(unit, ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta,
                                      want.data(), ldc);
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < ldc; ++j, ++checked)
              if (bits(got[size_t(i * ldc + j)]) != bits(want[size_t(i * ldc + j)]))
                FAIL("M N K = ", M, " ", N, " ", K, ", trans ", ta, tb, ", alpha ", alpha, ", ", threads,
                     " threads: C(", i, ",", j, ") kernel ", hex(got[size_t(i * ldc + j)]), ", emulation ",
                     hex(want[size_t(i * ldc + j)]));
        }
      }
  }
  omp_set_num_threads(threads_before);
  MESSAGE(hg::cpu::gemm_bf16_kernel_name() << ": " << checked << " elements of C equal, bit for bit");
}

}  // namespace

TEST_CASE("the VDPBF16PS GEMM equals its emulation bit for bit") { check_kernel_equals_emulation(GemmKernel::Avx512Bf16); }
TEST_CASE("the AMX GEMM equals its emulation bit for bit") { check_kernel_equals_emulation(GemmKernel::Amx); }

// ---- 4. Which kernel gemm_bf16 runs ---------------------------------------------------------------

TEST_CASE("gemm_bf16 runs on the best unit, and forcing an F32 kernel widens BF16 to F32") {
  KernelGuard guard;
  hg::cpu::set_gemm_kernel(GemmKernel::Auto);
  const bool amd = __builtin_cpu_is("amd");  // VDPBF16PS runs at the FMA rate there only (gemm.cpp)
  const GemmKernel best = hg::cpu::gemm_kernel_supported(GemmKernel::Amx) ? GemmKernel::Amx
                          : hg::cpu::gemm_kernel_supported(GemmKernel::Avx512Bf16) && amd ? GemmKernel::Avx512Bf16
                                                                                          : hg::cpu::gemm_kernel();
  CHECK(hg::cpu::gemm_bf16_kernel() == best);
  MESSAGE("gemm_bf16 here: " << hg::cpu::gemm_bf16_kernel_name());
  hg::cpu::set_gemm_kernel(GemmKernel::Portable);
  CHECK(hg::cpu::gemm_kernel() == GemmKernel::Portable);
  CHECK(hg::cpu::gemm_bf16_kernel() == GemmKernel::Portable);
  CHECK(hg::cpu::gemm_bf16_kernel_name() == "portable (BF16 widened to F32)");
  for (GemmKernel unit : {GemmKernel::Avx512Bf16, GemmKernel::Amx}) {
    if (!hg::cpu::gemm_kernel_supported(unit)) {
      CHECK_THROWS_WITH(hg::cpu::set_gemm_kernel(unit),
                        doctest::Contains(hg::cpu::gemm_kernel_unavailable_reason(unit).c_str()));
      continue;
    }
    hg::cpu::set_gemm_kernel(unit);
    CHECK(hg::cpu::gemm_bf16_kernel() == unit);
    CHECK(hg::cpu::gemm_kernel() != unit);  // F32 GEMMs stay on an F32 kernel
    CHECK(hg::cpu::gemm_bf16_kernel_name() == (unit == GemmKernel::Amx ? "amx" : "avx512_bf16"));
  }
  CHECK(hg::cpu::gemm_kernel_from_name("avx512_bf16") == GemmKernel::Avx512Bf16);
  CHECK(hg::cpu::gemm_kernel_from_name("amx") == GemmKernel::Amx);
  CHECK_THROWS_WITH(hg::cpu::gemm_kernel_from_name("tensor"),
                    doctest::Contains("portable, avx2, avx512, avx512_bf16, amx or auto"));
}
