// The emulated FP8 GEMM (framework/fp8/fp8_gemm.h): exact on small integers with F32
// accumulation, scales per tensor and per tile applied per segment, the limited
// accumulator's loss worked by hand, its error growing with K, and promotion fixing it.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "framework/fp8/fp8_gemm.h"
#include "framework/tensor/generator.h"

using hg::Tensor;
using namespace hg::fp8;

namespace {

// (R, C) of small integers in [-8, 8]: exact in E4M3, and so are their products and sums
Tensor small_ints(int64_t R, int64_t C, uint64_t seed) {
  std::vector<float> v(size_t(R * C));
  uint64_t s = seed;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = float(int((s >> 33) % 17) - 8);
  }
  return Tensor::from_vector(v, {R, C});
}

std::vector<double> exact_product(const Tensor& a, const Tensor& b) {  // a (M, K) · b (N, K)ᵀ in F64
  const int64_t M = a.size(0), N = b.size(0), K = a.size(1);
  std::vector<double> av = a.to_double_vector(), bv = b.to_double_vector(), c(size_t(M * N), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) c[size_t(m * N + n)] += av[size_t(m * K + k)] * bv[size_t(n * K + k)];
  return c;
}

Fp8Tensor e4m3(const Tensor& x, Tile tile, std::vector<float> scales) {
  return quantize(x, Format::E4M3, tile, scales);
}

}  // namespace

TEST_CASE("fp8 gemm: small integers, F32 accumulation, exact in both paths") {
  Tensor a = small_ints(33, 300, 1), b = small_ints(17, 300, 2);
  Fp8Tensor qa = e4m3(a, kPerTensor, {1.0f}), qb = e4m3(b, kPerTensor, {1.0f});
  const std::vector<double> want = exact_product(a, b);
  const std::vector<float> fast = gemm_tn(qa, qb).to_vector(), ref = gemm_tn_reference(qa, qb).to_vector();
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) bad += double(fast[i]) != want[i] || double(ref[i]) != want[i];
  CHECK(bad == 0);
}

TEST_CASE("fp8 gemm: per-tensor scales multiply the result once, per-tile scales per segment") {
  Tensor a = small_ints(4, 256, 3), b = small_ints(5, 256, 4);
  const std::vector<double> want = exact_product(a, b);
  // per tensor: A cast with scale 0.5 (scale_inv 2) and B with 0.25 (scale_inv 4); the
  // values stay small integers or halves, exact in E4M3, so C = exact · 1 again
  Fp8Tensor qa = e4m3(a, kPerTensor, {0.5f}), qb = e4m3(b, kPerTensor, {0.25f});
  std::vector<float> c = gemm_tn(qa, qb).to_vector();
  for (size_t i = 0; i < want.size(); ++i) REQUIRE(double(c[i]) == want[i]);
  // 1×128 tiles with a different power-of-two scale in each tile of each row: still exact
  std::vector<float> sa, sb;
  for (int r = 0; r < 4; ++r) sa.insert(sa.end(), {float(1 << r), 0.5f});
  for (int r = 0; r < 5; ++r) sb.insert(sb.end(), {0.25f, float(1 << r)});
  Fp8Tensor ta = e4m3(a, kTile1x128, sa), tb = e4m3(b, kTile1x128, sb);
  std::vector<float> fast = gemm_tn(ta, tb).to_vector(), ref = gemm_tn_reference(ta, tb).to_vector();
  for (size_t i = 0; i < want.size(); ++i) {
    REQUIRE(double(fast[i]) == want[i]);
    REQUIRE(double(ref[i]) == want[i]);
  }
}

TEST_CASE("fp8 gemm: the limited accumulator worked by hand") {
  // 1 + 2^-13 + 2^-14 has 15 significant bits; 14 keep 1 + 2^-13 (the last bit dropped)
  CHECK(keep_significant_bits(1 + 0x1p-13 + 0x1p-14, 14) == 1 + 0x1p-13);
  CHECK(keep_significant_bits(-(1 + 0x1p-13 + 0x1p-14), 14) == -(1 + 0x1p-13));  // toward zero
  CHECK(keep_significant_bits(20000.0, 14) == 20000.0);  // 20000 = 4·5000: 13 significant bits
  // Summing 20000 products 1·1: a 14-bit accumulator counts exactly to 2^14 = 16384; from
  // there 16384 + 1 needs 15 bits and drops back to 16384, so it sticks. F32 counts to
  // 20000, and so does promotion every 128 (each partial is at most 128).
  Tensor ones = Tensor::ones({1, 20000});
  Fp8Tensor q = e4m3(ones, kPerTensor, {1.0f});
  CHECK(gemm_tn(q, q, {Accumulate::Limited, 14, 0}).to_vector()[0] == 16384.0f);
  CHECK(gemm_tn(q, q, {Accumulate::F32}).to_vector()[0] == 20000.0f);
  CHECK(gemm_tn(q, q, {Accumulate::Promoted, 14, 128}).to_vector()[0] == 20000.0f);
}

TEST_CASE("fp8 gemm: limited accumulation error grows with K, promotion every 128 removes it") {
  hg::Generator gen(7);
  double err_limited[2], err_promoted[2];
  const int64_t Ks[2] = {256, 4096};
  for (int i = 0; i < 2; ++i) {
    const int64_t K = Ks[i];
    Tensor a = Tensor::uniform({8, K}, 0, 448, gen), b = Tensor::uniform({8, K}, 0, 448, gen);
    Fp8Tensor qa = e4m3(a, kPerTensor, {1.0f}), qb = e4m3(b, kPerTensor, {1.0f});
    std::vector<float> exact = gemm_tn_reference(qa, qb, {Accumulate::F32}).to_vector();
    std::vector<float> lim = gemm_tn(qa, qb, {Accumulate::Limited, 14, 0}).to_vector();
    std::vector<float> pro = gemm_tn(qa, qb, {Accumulate::Promoted, 14, 128}).to_vector();
    err_limited[i] = err_promoted[i] = 0;
    for (size_t j = 0; j < exact.size(); ++j) {
      err_limited[i] = std::max(err_limited[i], std::fabs(double(lim[j]) - exact[j]) / std::fabs(double(exact[j])));
      err_promoted[i] = std::max(err_promoted[i], std::fabs(double(pro[j]) - exact[j]) / std::fabs(double(exact[j])));
    }
    std::printf("K = %5lld: max relative error, 14-bit accumulator %.2e, promoted every 128 %.2e\n",
                (long long)K, err_limited[i], err_promoted[i]);
  }
  CHECK(err_limited[1] > 4 * err_limited[0]);        // grows with K
  CHECK(err_limited[1] > 0.01);                      // percents at K = 4096
  CHECK(err_promoted[1] < err_limited[1] / 10);      // promotion: bounded by 128 terms
  CHECK(err_promoted[1] < 2 * err_promoted[0] + 1e-6);  // and no longer grows with K
}

TEST_CASE("fp8 gemm: bad operands are refused with a message") {
  Fp8Tensor a = e4m3(Tensor::ones({2, 64}), kPerTensor, {1.0f}), b = e4m3(Tensor::ones({2, 32}), kPerTensor, {1.0f});
  CHECK_THROWS_WITH_AS(gemm_tn(a, b), doctest::Contains("their K must be equal"), std::invalid_argument);
  Fp8Tensor c = e4m3(Tensor::ones({2, 96}), {1, 48}, {1, 1, 1, 1}), d = e4m3(Tensor::ones({2, 96}), {1, 32}, {1, 1, 1, 1, 1, 1});
  CHECK_THROWS_WITH_AS(gemm_tn(c, d), doctest::Contains("multiples of each other"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(gemm_tn(a, a, {Accumulate::Limited, 0, 0}), doctest::Contains("1..24 bits"),
                       std::invalid_argument);
}
