// Tests for framework/cpu/gemm.h against a naive double-precision reference.
//
// Tolerance: the classical bound for a dot product of length K summed in FP32 is
//   |c - ref| ≤ γ_K · (|alpha|·Σ_p |a_ip|·|b_pj| + |beta|·|c_ij|),  γ_K ≈ K·eps,
// so each element is checked with  atol + rtol·absref,  absref being that sum of magnitudes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/cpu/gemm.h"

#include <omp.h>

using hg::cpu::GemmKernel;

namespace {

struct Problem {
  bool ta, tb;
  int64_t M, N, K;
  double alpha, beta;
  int64_t pad;  // extra elements at the end of every stored row (lda > row length)
};

// Element (r, c) of op(X) when X is stored with leading dimension ld.
double at(const std::vector<float>& X, bool trans, int64_t ld, int64_t r, int64_t c) {
  return trans ? X[size_t(c * ld + r)] : X[size_t(r * ld + c)];
}

// Runs one problem with the current kernel; returns the max of |err| / tolerance (≤ 1 passes).
double run_sgemm(const Problem& p, std::mt19937& rng, double* max_abs_err) {
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  const int64_t a_rows = p.ta ? p.K : p.M, a_cols = p.ta ? p.M : p.K;
  const int64_t b_rows = p.tb ? p.N : p.K, b_cols = p.tb ? p.K : p.N;
  const int64_t lda = a_cols + p.pad, ldb = b_cols + p.pad, ldc = p.N + p.pad;
  std::vector<float> A(size_t(a_rows * lda)), B(size_t(b_rows * ldb)), C(size_t(p.M * ldc));
  for (auto& v : A) v = U(rng);
  for (auto& v : B) v = U(rng);
  for (auto& v : C) v = U(rng);
  if (p.beta == 0)  // beta == 0 must overwrite C, even NaN
    for (auto& v : C) v = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> C0 = C;

  hg::cpu::sgemm(p.ta, p.tb, p.M, p.N, p.K, float(p.alpha), A.data(), lda, B.data(), ldb,
                 float(p.beta), C.data(), ldc);

  const double eps = std::numeric_limits<float>::epsilon();
  double worst = 0;
  *max_abs_err = 0;
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = 0; j < p.N; ++j) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < p.K; ++k) {
        const double prod = at(A, p.ta, lda, i, k) * at(B, p.tb, ldb, k, j);
        ref += prod;
        mag += std::fabs(prod);
      }
      ref *= p.alpha;
      mag *= std::fabs(p.alpha);
      if (p.beta != 0) {
        ref += p.beta * C0[size_t(i * ldc + j)];
        mag += std::fabs(p.beta * C0[size_t(i * ldc + j)]);
      }
      const double err = std::fabs(C[size_t(i * ldc + j)] - ref);
      const double tol = 1e-30 + 2.0 * double(p.K + 2) * eps * mag;
      *max_abs_err = std::max(*max_abs_err, err);
      worst = std::max(worst, std::isnan(err) ? 1e30 : err / tol);
    }
  // Padding columns of C are never written.
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t j = p.N; j < ldc; ++j)
      if (std::memcmp(&C[size_t(i * ldc + j)], &C0[size_t(i * ldc + j)], 4) != 0) worst = 1e30;
  return worst;
}

std::vector<GemmKernel> kernels_here() {
  std::vector<GemmKernel> ks{GemmKernel::Portable};
  for (GemmKernel k : {GemmKernel::Avx2, GemmKernel::Avx512}) {
    if (hg::cpu::gemm_kernel_supported(k)) ks.push_back(k);
    else MESSAGE("this CPU cannot run the " << (k == GemmKernel::Avx2 ? "avx2+fma" : "avx512") << " kernel: not tested here");
  }
  return ks;
}

struct KernelGuard {  // restores automatic kernel choice after a test
  ~KernelGuard() { hg::cpu::set_gemm_kernel(GemmKernel::Auto); }
};

const int64_t kShapes[][3] = {
    {1, 1, 1},   {1, 17, 3},   {5, 7, 9},     {6, 16, 1},    {7, 17, 33},  {13, 37, 29},
    {64, 64, 64}, {100, 1, 50}, {1, 100, 50}, {97, 131, 257}, {150, 70, 600}, {257, 33, 513},
    {31, 300, 17}, {200, 260, 40}};

}  // namespace

TEST_CASE("sgemm matches a double reference over shapes and transposes and alpha and beta and padding") {
  KernelGuard guard;
  std::mt19937 rng(1234);
  for (GemmKernel kernel : kernels_here()) {
    hg::cpu::set_gemm_kernel(kernel);
    double worst = 0, worst_abs = 0;
    int cases = 0;
    for (const auto& s : kShapes)
      for (int t = 0; t < 4; ++t) {
        // (alpha, beta) pairs rotate through the shapes: every pair meets every transpose case.
        const double pairs[][2] = {{1.0, 0.0}, {-0.5, 1.0}, {1.0, 0.25}, {-0.5, 0.0}, {1.0, 1.0}, {-0.5, 0.25}};
        for (int q = 0; q < 2; ++q) {
          const double alpha = pairs[(cases + q) % 6][0], beta = pairs[(cases + q) % 6][1];
          Problem p{bool(t & 1), bool(t & 2), s[0], s[1], s[2], alpha, beta, (t + cases) % 3 == 0 ? 0 : 5};
          double abs_err = 0;
          const double r = run_sgemm(p, rng, &abs_err);
          ++cases;
          worst_abs = std::max(worst_abs, abs_err);
          if (r > 1.0)
            FAIL_CHECK("kernel " << std::string(hg::cpu::gemm_kernel_name()) << " M=" << p.M << " N=" << p.N
                                 << " K=" << p.K << " ta=" << p.ta << " tb=" << p.tb << " alpha="
                                 << alpha << " beta=" << beta << " pad=" << p.pad
                                 << ": error/tolerance = " << r << " (max |err| " << abs_err << ")");
          worst = std::max(worst, r);
        }
      }
    MESSAGE("kernel " << std::string(hg::cpu::gemm_kernel_name()) << ": " << cases << " problems, max |err| "
                      << worst_abs << ", max err/tolerance " << worst);
    CHECK(worst <= 1.0);
  }
}

TEST_CASE("sgemm edge cases: K = 0 scales C by beta and M or N = 0 touches nothing") {
  KernelGuard guard;
  for (GemmKernel kernel : kernels_here()) {
    hg::cpu::set_gemm_kernel(kernel);
    std::vector<float> C = {1, 2, 3, 4, 5, 6};
    float dummy = 7;
    hg::cpu::sgemm(false, false, 2, 3, 0, 1.f, &dummy, 1, &dummy, 3, 0.5f, C.data(), 3);
    const std::vector<float> half_c = {0.5f, 1, 1.5f, 2, 2.5f, 3};
    CHECK(C == half_c);
    hg::cpu::sgemm(false, false, 0, 3, 4, 1.f, &dummy, 4, &dummy, 3, 0.f, C.data(), 3);
    hg::cpu::sgemm(false, false, 2, 0, 4, 1.f, &dummy, 4, &dummy, 1, 0.f, C.data(), 1);
    CHECK(C == half_c);
  }
}

TEST_CASE("set_gemm_kernel reports the kernel in use") {
  KernelGuard guard;
  hg::cpu::set_gemm_kernel(GemmKernel::Portable);
  CHECK(hg::cpu::gemm_kernel() == GemmKernel::Portable);
  CHECK(std::string(hg::cpu::gemm_kernel_name()) == "portable");
  hg::cpu::set_gemm_kernel(GemmKernel::Auto);
  CHECK(hg::cpu::gemm_kernel() != GemmKernel::Auto);
  MESSAGE("automatic choice on this CPU: " << std::string(hg::cpu::gemm_kernel_name()));
}

TEST_CASE("dgemm matches the reference to FP64 rounding") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> U(-1, 1);
  for (const auto& s : kShapes)
    for (int t = 0; t < 4; ++t) {
      const int64_t M = s[0], N = s[1], K = s[2];
      const bool ta = t & 1, tb = t & 2;
      const int64_t lda = (ta ? M : K) + 2, ldb = (tb ? K : N) + 1, ldc = N + 3;
      std::vector<double> A(size_t((ta ? K : M) * lda)), B(size_t((tb ? N : K) * ldb)), C(size_t(M * ldc));
      for (auto& v : A) v = U(rng);
      for (auto& v : B) v = U(rng);
      for (auto& v : C) v = U(rng);
      const auto C0 = C;
      hg::cpu::dgemm(ta, tb, M, N, K, 0.75, A.data(), lda, B.data(), ldb, -1.0, C.data(), ldc);
      double worst = 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          long double ref = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            const long double pr = (long double)(ta ? A[size_t(k * lda + i)] : A[size_t(i * lda + k)]) *
                                   (tb ? B[size_t(j * ldb + k)] : B[size_t(k * ldb + j)]);
            ref += pr;
            mag += std::fabs(pr);
          }
          ref = 0.75L * ref - C0[size_t(i * ldc + j)];
          mag = 0.75L * mag + std::fabs(C0[size_t(i * ldc + j)]);
          const double tol = 2.0 * (K + 2) * 1.1102230246251565e-16 * double(mag);
          worst = std::max(worst, std::fabs(double(C[size_t(i * ldc + j)] - ref)) / tol);
        }
      INFO("M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb);
      CHECK(worst <= 1.0);
    }
}

TEST_CASE("sgemm splits C between 1 and 3 and 4 threads and gets the same accuracy") {
  KernelGuard guard;
  std::mt19937 rng(77);
  const int saved = omp_get_max_threads();
  const int64_t shapes[][3] = {{301, 257, 64}, {13, 900, 70}, {700, 11, 90}, {96, 200, 300}};
  for (GemmKernel kernel : kernels_here()) {
    hg::cpu::set_gemm_kernel(kernel);
    for (int threads : {1, 3, 4}) {
      omp_set_num_threads(threads);
      for (const auto& s : shapes)
        for (int t = 0; t < 4; ++t) {
          Problem p{bool(t & 1), bool(t & 2), s[0], s[1], s[2], 1.0, t == 3 ? 0.5 : 0.0, 3};
          double abs_err = 0;
          const double r = run_sgemm(p, rng, &abs_err);
          INFO("kernel " << std::string(hg::cpu::gemm_kernel_name()) << " threads " << threads << " M=" << p.M
                         << " N=" << p.N << " K=" << p.K << " t=" << t << ": err/tol " << r << ", max |err| " << abs_err);
          CHECK(r <= 1.0);
        }
    }
  }
  omp_set_num_threads(saved);
}

// The AVX2 and AVX-512 micro-kernels differ only in how many elements of C they compute at
// once: every element still receives its K products by fused multiply-adds, k in order, in
// the same KC blocks. So they give the same bits, and ranks of a data-parallel job on an AVX2
// and an AVX-512 machine agree bit for bit (chapter 13, section 3). The threads split C, not
// K, so the thread count does not change the bits either. The portable kernel (no FMA)
// rounds each product and is not expected to match.
TEST_CASE("the AVX2 and AVX-512 kernels give the same bits, on 1 and on 3 threads") {
  if (!hg::cpu::gemm_kernel_supported(GemmKernel::Avx2) || !hg::cpu::gemm_kernel_supported(GemmKernel::Avx512)) {
    MESSAGE("this CPU cannot run both the avx2+fma and the avx512 kernels: not compared here");
    return;
  }
  KernelGuard guard;
  const int saved = omp_get_max_threads();
  std::mt19937 rng(2026);
  std::normal_distribution<float> N01(0.f, 1.f);
  // K = 600 and 784 are several KC blocks; 784 x 512 x 128 is chapter 13's first layer.
  const int64_t shapes[][3] = {{7, 17, 33}, {128, 512, 784}, {97, 131, 600}, {64, 10, 256}, {33, 300, 17}};
  int64_t compared = 0;
  for (const auto& s : shapes)
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      const int64_t M = s[0], N = s[1], K = s[2];
      std::vector<float> A(size_t(M * K)), B(size_t(K * N)), C0(size_t(M * N));
      for (auto& v : A) v = N01(rng);
      for (auto& v : B) v = N01(rng);
      for (auto& v : C0) v = N01(rng);
      const int64_t lda = ta ? M : K, ldb = tb ? K : N;
      const float beta = t == 3 ? 0.5f : 0.f;
      std::vector<float> C[2][2];  // [kernel][threads 1, 3]
      for (int k = 0; k < 2; ++k)
        for (int th = 0; th < 2; ++th) {
          hg::cpu::set_gemm_kernel(k == 0 ? GemmKernel::Avx2 : GemmKernel::Avx512);
          omp_set_num_threads(th == 0 ? 1 : 3);
          C[k][th] = C0;
          hg::cpu::sgemm(ta, tb, M, N, K, 0.75f, A.data(), lda, B.data(), ldb, beta, C[k][th].data(), N);
        }
      INFO("M=" << M << " N=" << N << " K=" << K << " ta=" << ta << " tb=" << tb);
      for (int th = 0; th < 2; ++th)
        CHECK(std::memcmp(C[0][th].data(), C[1][th].data(), C0.size() * 4) == 0);
      CHECK(std::memcmp(C[1][0].data(), C[1][1].data(), C0.size() * 4) == 0);
      compared += int64_t(C0.size());
    }
  omp_set_num_threads(saved);
  MESSAGE(compared << " elements of C compared, each from both kernels on 1 and on 3 threads");
}

TEST_CASE("kernel names as HG_GEMM_KERNEL spells them") {
  CHECK(hg::cpu::gemm_kernel_from_name("portable") == GemmKernel::Portable);
  CHECK(hg::cpu::gemm_kernel_from_name("avx2") == GemmKernel::Avx2);
  CHECK(hg::cpu::gemm_kernel_from_name("avx512") == GemmKernel::Avx512);
  CHECK(hg::cpu::gemm_kernel_from_name("auto") == GemmKernel::Auto);
  CHECK_THROWS_WITH_AS(hg::cpu::gemm_kernel_from_name("avx1024"), doctest::Contains("unknown kernel"),
                       std::runtime_error);
}
