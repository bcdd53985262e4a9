// gemm_f16 / gemm_bf16: tensor-core numerics (F16/BF16 operands, exact products, FP32
// accumulation). Inputs are small multiples of 1/4, so every product and every partial sum
// is exactly representable in FP32: the result must equal the exact answer bit for bit,
// whatever the order of the additions.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "framework/cpu/gemm.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"

using hg::cpu::GemmKernel;

namespace {

// Bits of v in IEEE binary16, for values known to be representable (the test's own encoder,
// independent of framework/dtype): sign, 5-bit exponent (bias 15), 10-bit mantissa.
uint16_t exact_half_bits(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  v = std::fabs(v);
  if (v == 0) return sign;
  int e;
  std::frexp(v, &e);  // v = f·2^e, f in [0.5, 1)
  int exp_field = e - 1 + 15;
  double mant;
  if (exp_field <= 0) {  // subnormal: v = m · 2^-24
    exp_field = 0;
    mant = v / std::ldexp(1.0, -24);
  } else {
    mant = (v / std::ldexp(1.0, e - 1) - 1.0) * 1024.0;
  }
  REQUIRE(mant == std::floor(mant));  // representable
  REQUIRE(exp_field < 31);
  return uint16_t(sign | (exp_field << 10) | uint16_t(mant));
}
uint16_t exact_bf16_bits(double v) {
  const float f = float(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  REQUIRE((bits & 0xffffu) == 0);  // representable: the low 16 bits of the float are zero
  return uint16_t(bits >> 16);
}

std::vector<GemmKernel> kernels_here() {
  std::vector<GemmKernel> ks{GemmKernel::Portable};
  for (GemmKernel k : {GemmKernel::Avx2, GemmKernel::Avx512})
    if (hg::cpu::gemm_kernel_supported(k)) ks.push_back(k);
  return ks;
}
struct KernelGuard {
  ~KernelGuard() { hg::cpu::set_gemm_kernel(GemmKernel::Auto); }
};

template <class Half, class Encode, class Gemm>
void check_exact(Encode encode, Gemm gemm, const char* name, const std::vector<GemmKernel>& kernels) {
  KernelGuard guard;
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> Q(-32, 32);  // values q/4 in [-8, 8]
  const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {6, 16, 9}, {17, 33, 64}, {70, 45, 300}};
  for (GemmKernel kernel : kernels) {
    hg::cpu::set_gemm_kernel(kernel);
    for (const auto& s : shapes)
      for (int t = 0; t < 4; ++t) {
        const int64_t M = s[0], N = s[1], K = s[2];
        const bool ta = t & 1, tb = t & 2;
        const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
        std::vector<int> qa(size_t((ta ? K : M) * lda)), qb(size_t((tb ? N : K) * ldb));
        std::vector<Half> A(qa.size()), B(qb.size());
        for (size_t i = 0; i < qa.size(); ++i) A[i] = Half::from_bits(encode((qa[i] = Q(rng)) / 4.0));
        for (size_t i = 0; i < qb.size(); ++i) B[i] = Half::from_bits(encode((qb[i] = Q(rng)) / 4.0));
        std::vector<float> C(size_t(M * ldc));
        std::vector<int> qc(C.size());
        for (size_t i = 0; i < C.size(); ++i) C[i] = float((qc[i] = Q(rng)) / 4.0);
        // C = 2·A·B + 0.5·C: alpha and beta are powers of two, so still exact.
        gemm(ta, tb, M, N, K, 2.f, A.data(), lda, B.data(), ldb, 0.5f, C.data(), ldc);
        int64_t mismatches = 0;
        double max_diff = 0;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            int64_t dot = 0;  // exact, in units of 1/16
            for (int64_t k = 0; k < K; ++k)
              dot += int64_t(qa[size_t(ta ? k * lda + i : i * lda + k)]) * qb[size_t(tb ? j * ldb + k : k * ldb + j)];
            const double exact = 2.0 * dot / 16.0 + 0.5 * qc[size_t(i * ldc + j)] / 4.0;
            const float got = C[size_t(i * ldc + j)];
            if (got != float(exact)) ++mismatches;
            max_diff = std::max(max_diff, std::fabs(got - exact));
          }
        INFO(std::string(name) << " kernel " << hg::cpu::gemm_bf16_kernel_name() << " M=" << M << " N=" << N << " K=" << K
                  << " ta=" << ta << " tb=" << tb << ": " << mismatches << " mismatches, max |diff| " << max_diff);
        CHECK(mismatches == 0);
      }
  }
}

}  // namespace

TEST_CASE("gemm_f16 is bit-exact on small-integer inputs") {
  check_exact<hg::half>(exact_half_bits, hg::cpu::gemm_f16, "gemm_f16", kernels_here());
}

// The CPU's BF16 units too (bf16_units.h): their own order of additions, but every partial
// sum here is exact, so any order gives the exact answer.
TEST_CASE("gemm_bf16 is bit-exact on small-integer inputs, on the F32 kernels and the BF16 units") {
  std::vector<GemmKernel> kernels = kernels_here();
  for (GemmKernel unit : {GemmKernel::Avx512Bf16, GemmKernel::Amx})
    if (hg::cpu::gemm_kernel_supported(unit)) kernels.push_back(unit);
    else MESSAGE(hg::cpu::gemm_kernel_unavailable_reason(unit) << ": not tested here");
  check_exact<hg::bfloat16>(exact_bf16_bits, hg::cpu::gemm_bf16, "gemm_bf16", kernels);
}

TEST_CASE("gemm_f16 products are exact in FP32 from subnormal times subnormal to max times max") {
  // 2^-24 (the smallest F16 subnormal) squared is 2^-48: far below F16's range, but an exact
  // FP32 normal. 65504² = 4290774016 needs 22 significant bits: exact in FP32's 24.
  const uint16_t tiny = exact_half_bits(std::ldexp(1.0, -24)), big = exact_half_bits(65504.0);
  CHECK(tiny == 0x0001);
  CHECK(big == 0x7bff);
  const hg::half A[2] = {hg::half::from_bits(tiny), hg::half::from_bits(big)};
  const hg::half B[2] = {hg::half::from_bits(tiny), hg::half::from_bits(big)};
  float C[4] = {0, 0, 0, 0};
  // outer product: A as (2,1), B as (1,2)
  hg::cpu::gemm_f16(false, false, 2, 2, 1, 1.f, A, 1, B, 2, 0.f, C, 2);
  CHECK(C[0] == std::ldexp(1.0f, -48));
  CHECK(double(C[3]) == 65504.0 * 65504.0);
  CHECK(double(C[1]) == std::ldexp(65504.0, -24));
}

// Widening is exact and the same kernel adds in the same order, so on ANY inputs (not just
// small integers) gemm_f16/gemm_bf16 must equal sgemm on the widened operands bit for bit —
// ragged edges, several K blocks (K > KC) and the multithreaded split included.
template <class Half, class Gemm>
void check_equals_widened_sgemm(Gemm gemm, const char* name) {
  KernelGuard guard;
  std::mt19937 rng(7);
  std::normal_distribution<float> X(0.f, 3.f);
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 70, 300}, {130, 49, 700}, {5, 5300, 21}};
  for (GemmKernel kernel : kernels_here()) {
    hg::cpu::set_gemm_kernel(kernel);
    for (const auto& s : shapes)
      for (int t = 0; t < 4; ++t) {
        const int64_t M = s[0], N = s[1], K = s[2];
        const bool ta = t & 1, tb = t & 2;
        const int64_t lda = (ta ? M : K) + 1, ldb = (tb ? K : N) + 2, ldc = N + 3;
        std::vector<Half> A(size_t((ta ? K : M) * lda)), B(size_t((tb ? N : K) * ldb));
        std::vector<float> Aw(A.size()), Bw(B.size());  // the widened operands
        for (size_t i = 0; i < A.size(); ++i) Aw[i] = float(A[i] = Half(X(rng)));
        for (size_t i = 0; i < B.size(); ++i) Bw[i] = float(B[i] = Half(X(rng)));
        std::vector<float> C(size_t(M * ldc));
        for (float& c : C) c = X(rng);
        std::vector<float> ref(C);
        gemm(ta, tb, M, N, K, 0.75f, A.data(), lda, B.data(), ldb, -1.5f, C.data(), ldc);
        hg::cpu::sgemm(ta, tb, M, N, K, 0.75f, Aw.data(), lda, Bw.data(), ldb, -1.5f, ref.data(), ldc);
        int64_t mismatches = 0;
        double max_diff = 0;
        for (size_t i = 0; i < C.size(); ++i) {
          mismatches += std::memcmp(&C[i], &ref[i], 4) != 0;
          max_diff = std::max(max_diff, double(std::fabs(C[i] - ref[i])));
        }
        INFO(std::string(name) << " kernel " << std::string(hg::cpu::gemm_kernel_name()) << " M=" << M << " N=" << N
                  << " K=" << K << " ta=" << ta << " tb=" << tb << ": " << mismatches
                  << " entries differ from sgemm on the widened operands, max |diff| " << max_diff);
        CHECK(mismatches == 0);
      }
  }
}

TEST_CASE("gemm_f16 equals sgemm on the widened operands, bit for bit") {
  check_equals_widened_sgemm<hg::half>(hg::cpu::gemm_f16, "gemm_f16");
}

TEST_CASE("gemm_bf16 equals sgemm on the widened operands, bit for bit") {
  check_equals_widened_sgemm<hg::bfloat16>(hg::cpu::gemm_bf16, "gemm_bf16");
}
