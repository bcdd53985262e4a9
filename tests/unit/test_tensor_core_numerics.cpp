// CPU tests of the tensor-core emulation: what F16, BF16 and TF32 tensor cores compute, as
// the GPU tests and chapter 05 reproduce it on the CPU.
//
//   TF32 rounding     round_to_tf32_rna (the hardware's cvt.rna.tf32.f32: ties away from zero)
//                     against an independent reference (the two neighbouring TF32 values, the
//                     nearer one, on a tie the larger magnitude), on every tie pattern and a
//                     strided sweep of all floats; it differs from halfgrad's TF32 format
//                     (round_to_tf32, ties to even) exactly on the ties that go different ways
//   exact products    a product of two F16, BF16 or TF32 values is exact in F32
//   the emulation     F32 sums of the exact products: small integers give the exact sum in any
//                     order (bit for bit), and for TF32 an F32 GEMM of the rounded values is the
//                     tensor core's arithmetic
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuda/gemm/validate.h"
#include "framework/cpu/gemm.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"
#include "framework/dtype/tf32.h"

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The value of a positive pattern read with an unbounded exponent (0x7f800000 is 2^128 here):
// the candidate one step above the largest float.
double magnitude(uint32_t pattern) {
  if ((pattern & 0x7fffffffu) == 0x7f800000u) return std::ldexp(1.0, 128);
  return std::fabs(double(from_bits(pattern)));
}

// Nearest TF32 value, ties away from zero, built from its definition: the two TF32 values
// around x (x with its 13 low bits cleared, and one TF32 step up in magnitude), the nearer
// one, on a tie the one of larger magnitude. An "up" past the largest float is inf.
uint32_t reference_rna(uint32_t x) {
  const uint32_t sign = x & 0x80000000u, mag = x & 0x7fffffffu;
  const uint32_t down = mag & ~0x1fffu, up = down + 0x2000u;
  const double v = magnitude(mag), dd = v - magnitude(down), du = magnitude(up) - v;
  const uint32_t pick = dd < du ? down : up;  // dd == du: a tie, away from zero
  return sign | (pick >= 0x7f800000u ? 0x7f800000u : pick);
}

}  // namespace

TEST_CASE("TF32, the hardware's rounding: the cases by hand") {
  CHECK(hg::round_to_tf32_rna(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f);            // tie: away from zero
  CHECK(hg::round_to_tf32(1.0f + 0x1p-11f) == 1.0f);                           // halfgrad's format: to even
  CHECK(hg::round_to_tf32_rna(-(1.0f + 0x1p-11f)) == -(1.0f + 0x1p-10f));      // away from zero, negative too
  CHECK(hg::round_to_tf32_rna(1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f);         // tie whose even neighbour is up: same
  CHECK(hg::round_to_tf32_rna(2049.0f) == 2050.0f);                            // RNE gives 2048
  CHECK(hg::round_to_tf32(2049.0f) == 2048.0f);
  CHECK(hg::round_to_tf32_rna(1.0f + 0x1p-12f) == 1.0f);                       // below half: down
  CHECK(hg::round_to_tf32_rna(from_bits(0x3fffe000u | 0x1000u)) == 2.0f);      // carry into the exponent
  CHECK(std::isinf(hg::round_to_tf32_rna(from_bits(0x7f7fe000u | 0x1000u))));  // past the largest: inf
  CHECK(hg::round_to_tf32_rna(from_bits(0x7f7fe000u | 0x0fffu)) == from_bits(0x7f7fe000u));
  CHECK(bits_of(hg::round_to_tf32_rna(from_bits(0x00001000u))) == 0x00002000u);  // subnormal tie: away
  CHECK(bits_of(hg::round_to_tf32_rna(-0.0f)) == 0x80000000u);
  CHECK(std::isinf(hg::round_to_tf32_rna(INFINITY)));
  CHECK(std::isnan(hg::round_to_tf32_rna(NAN)));
  CHECK(std::isnan(hg::round_to_tf32_rna(from_bits(0x7fc00001u))));
}

TEST_CASE("TF32, the hardware's rounding: every tie and its neighbours, and a strided sweep, vs the reference") {
  int64_t checked = 0, mismatches = 0, ties_differing = 0;
  uint32_t first_bad = 0;
  auto check = [&](uint32_t x) {
    if ((x & 0x7f800000u) == 0x7f800000u) return;  // inf and NaN: the cases above
    ++checked;
    const uint32_t got = bits_of(hg::round_to_tf32_rna(from_bits(x)));
    if (got != reference_rna(x) && mismatches++ == 0) first_bad = x;
    if (got != bits_of(hg::round_to_tf32(from_bits(x)))) {
      // Ties to even and ties away differ only on a tie whose even neighbour is below.
      CHECK((x & 0x1fffu) == 0x1000u);
      ++ties_differing;
    }
  };
  for (uint32_t hi = 0; hi < (1u << 19); ++hi)  // every sign, exponent and TF32 mantissa
    for (uint32_t low : {0x0fffu, 0x1000u, 0x1001u})
      check((hi << 13) | low);
  for (uint64_t x = 0; x < (uint64_t(1) << 32); x += 40009)  // a prime stride through all floats
    check(uint32_t(x));
  INFO("first mismatch: 0x" << std::hex << first_bad);
  CHECK(mismatches == 0);
  CHECK(checked > 1600000);  // 3 x 2^19 tie patterns (less inf and NaN) + the sweep
  CHECK(ties_differing > 260000);  // half of the 522,240 finite ties: those whose last kept bit is 0
}

TEST_CASE("products of two F16, BF16 or TF32 values are exact in F32") {
  hg::cuda::gemm::SplitMix64 g(7);
  int64_t inexact = 0;
  for (int i = 0; i < 200000; ++i) {
    const float a = float(8.0 * g.uniform01() - 4.0), b = float(std::ldexp(g.uniform01() - 0.5, int(g.next() % 40) - 20));
    const float pairs[3][2] = {{float(hg::half(a)), float(hg::half(b))},
                               {float(hg::bfloat16(a)), float(hg::bfloat16(b))},
                               {hg::round_to_tf32_rna(a), hg::round_to_tf32_rna(b)}};
    for (const auto& p : pairs) inexact += double(p[0] * p[1]) != double(p[0]) * double(p[1]);
    // F32 values themselves are not: 24 x 24 bits need 48
  }
  CHECK(inexact == 0);
  CHECK(double(1.1f * 1.3f) != double(1.1f) * double(1.3f));
}

TEST_CASE("the emulation: small integers sum exactly in any order, TF32 = an F32 GEMM of the rounded values") {
  using namespace hg::cuda::gemm;
  const int M = 33, N = 29, K = 300;
  std::vector<float> A(M * K), B(K * N), R(M * K), S(K * N);
  fill_small_integers(A, 1);
  fill_small_integers(B, 2);
  fill_uniform(R, 3);
  fill_uniform(S, 4);
  for (float& v : R) v = hg::round_to_tf32_rna(v);
  for (float& v : S) v = hg::round_to_tf32_rna(v);
  // k-order (one mma after another) vs sgemm's blocked order
  auto k_order = [&](const std::vector<float>& X, const std::vector<float>& Y) {
    std::vector<float> C(M * N, 0.0f);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k) acc += X[m * K + k] * Y[k * N + n];
        C[m * N + n] = acc;
      }
    return C;
  };
  std::vector<float> C(M * N);
  hg::cpu::sgemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N);
  CHECK(C == k_order(A, B));
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) CHECK(double(C[m * N + n]) == reference_entry(A.data(), B.data(), N, K, m, n).value);
  // Random TF32 values: two orders of exact products, each within the F32 bound of the exact sum.
  hg::cpu::sgemm(false, false, M, N, K, 1.0f, R.data(), K, S.data(), N, 0.0f, C.data(), N);
  const std::vector<float> D = k_order(R, S);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      const EntryRef e = reference_entry(R.data(), S.data(), N, K, m, n);
      CHECK(std::fabs(C[m * N + n] - e.value) <= f32_dot_error_bound(K, e.abs_sum));
      CHECK(std::fabs(D[m * N + n] - e.value) <= f32_dot_error_bound(K, e.abs_sum));
    }
}
