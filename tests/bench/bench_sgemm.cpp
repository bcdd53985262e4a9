// bench_sgemm — halfgrad's sgemm against OpenBLAS, same sizes, same threads, same run.
//
//   bench_sgemm [--sizes 256,512,1024,2048] [--threads 2] [--kernels all|best] [--min-time 0.5]
//               [--no-training]     (skip the second table: the GEMM shapes chapter 02 trains with)
//               [--no-lowp]         (skip the third table: gemm_f16 / gemm_bf16 vs sgemm, same shapes)
//               [--only-lowp]       (print only the third table)
//
// OpenBLAS is the anchor only: it is loaded here with dlopen at run time, so the engine never
// links a BLAS. Debian's OpenMP build (libopenblas0-openmp) is looked for first, because it
// shares halfgrad's OpenMP runtime; the pthread build would fight it for the two cores.
//
// Validate before timing: for each size both libraries compute the same product and must
// agree with a double-precision reference on sampled entries (and with each other) before a
// figure is printed. Then the contenders are timed taking turns (best_seconds below).
#include <dlfcn.h>
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "framework/cpu/bf16_units.h"
#include "framework/cpu/gemm.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"
#include "tests/bench/peak.h"

namespace {

// ---- OpenBLAS through dlopen --------------------------------------------------------------
// cblas_sgemm(order, transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)
enum { CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 };
using cblas_sgemm_t = void (*)(int, int, int, int, int, int, float, const float*, int,
                               const float*, int, float, float*, int);
using set_threads_t = void (*)(int);
using get_config_t = char* (*)();

struct OpenBlas {
  std::string path;
  cblas_sgemm_t sgemm = nullptr;
  set_threads_t set_num_threads = nullptr;
  get_config_t config = nullptr, corename = nullptr;
};

OpenBlas load_openblas() {
  OpenBlas ob;
  const char* candidates[] = {"/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
                              "libopenblas.so.0", "libopenblas.so"};
  for (const char* path : candidates) {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) continue;
    ob.sgemm = reinterpret_cast<cblas_sgemm_t>(dlsym(h, "cblas_sgemm"));
    ob.set_num_threads = reinterpret_cast<set_threads_t>(dlsym(h, "openblas_set_num_threads"));
    ob.config = reinterpret_cast<get_config_t>(dlsym(h, "openblas_get_config"));
    ob.corename = reinterpret_cast<get_config_t>(dlsym(h, "openblas_get_corename"));
    if (ob.sgemm) {
      ob.path = path;
      return ob;
    }
  }
  return ob;
}

// ---- timing ----------------------------------------------------------------------------------
// The contenders take turns: one repetition of each per round, after one warm-up call each,
// for at least min_time seconds per contender and 5 rounds; each keeps its best time. Taking
// turns matters on a shared machine: a burst of load from another program then slows every
// contender of that round, not just whoever happened to be timed at that moment.
std::vector<double> best_seconds(const std::vector<std::function<void()>>& runs, double min_time) {
  for (const auto& run : runs) run();
  std::vector<double> best(runs.size(), 1e30);
  double total = 0;
  for (int round = 0; round < 5 || total < min_time * double(runs.size()); ++round)
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      runs[i]();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best[i] = std::min(best[i], s);
      total += s;
    }
  return best;
}

// Max over sampled (i, j) of |C(i,j) - ref| / (K·eps·Σ|a||b|): ≤ 1 is "agrees to rounding".
double check_sampled(const std::vector<float>& A, const std::vector<float>& B,
                     const std::vector<float>& C, int n, std::mt19937& rng) {
  std::uniform_int_distribution<int> idx(0, n - 1);
  double worst = 0;
  for (int s = 0; s < 400; ++s) {
    const int i = idx(rng), j = idx(rng);
    double ref = 0, mag = 0;
    for (int k = 0; k < n; ++k) {
      const double p = double(A[size_t(i) * n + k]) * B[size_t(k) * n + j];
      ref += p;
      mag += std::fabs(p);
    }
    const double tol = 2.0 * n * 1.1920929e-7 * mag;
    worst = std::max(worst, std::fabs(C[size_t(i) * n + j] - ref) / tol);
  }
  return worst;
}

// The GEMMs one training step of chapter 02 runs (batch 128), with their transpose flags:
// Linear y = x·Wᵀ, dx = dy·W, dW = dyᵀ·x; conv2d through the batched im2col of
// framework/ops/conv.cpp: Y (F, N·P) = W·cols, dW = dY·colsᵀ, dcols = Wᵀ·dY.
struct Shape {
  const char* what;
  bool ta, tb;
  int M, N, K;
};
const Shape kTrainingShapes[] = {
    {"mlp fc1 forward      x.W1^T", false, true, 128, 512, 784},
    {"mlp fc1 dW1          dy^T.x", true, false, 512, 784, 128},
    {"mlp fc2 forward      h.W2^T", false, true, 128, 256, 512},
    {"mlp fc2 dx           dy.W2", false, false, 128, 512, 256},
    {"mlp fc2 dW2          dy^T.h", true, false, 256, 512, 128},
    {"cnn conv1 forward   W.cols", false, false, 32, 100352, 9},
    {"cnn conv2 forward   W.cols", false, false, 64, 25088, 288},
    {"cnn conv2 dW     dY.cols^T", false, true, 64, 288, 25088},
    {"cnn conv2 dcols     W^T.dY", true, false, 288, 25088, 64},
    {"cnn fc1 forward      x.W^T", false, true, 128, 128, 3136},
    {"cnn fc1 dW           dy^T.x", true, false, 128, 3136, 128},
};

bool training_shapes(const OpenBlas& ob, int threads, double min_time) {
  std::printf("\nchapter 02's GEMM shapes (automatic kernel, %d threads)\n", threads);
  std::printf("%-28s %2s %2s %6s %6s %6s %10s %10s %8s\n", "", "tA", "tB", "M", "N", "K", "halfgrad",
              ob.sgemm ? "OpenBLAS" : "", ob.sgemm ? "ratio" : "");
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  bool ok = true;
  for (const Shape& sh : kTrainingShapes) {
    const int64_t a_cols = sh.ta ? sh.M : sh.K, b_cols = sh.tb ? sh.K : sh.N;
    std::vector<float> A(size_t(sh.M) * sh.K), B(size_t(sh.K) * sh.N), C(size_t(sh.M) * sh.N),
        Cref(C.size());
    for (auto& v : A) v = U(rng);
    for (auto& v : B) v = U(rng);
    auto ours = [&] {
      hg::cpu::sgemm(sh.ta, sh.tb, sh.M, sh.N, sh.K, 1.f, A.data(), a_cols, B.data(), b_cols, 0.f,
                     C.data(), sh.N);
    };
    auto theirs = [&] {
      ob.sgemm(CblasRowMajor, sh.ta ? CblasTrans : CblasNoTrans, sh.tb ? CblasTrans : CblasNoTrans,
               sh.M, sh.N, sh.K, 1.f, A.data(), int(a_cols), B.data(), int(b_cols), 0.f, Cref.data(), sh.N);
    };
    ours();
    // validate: sampled entries against a double reference
    std::uniform_int_distribution<int> ri(0, sh.M - 1), ci(0, sh.N - 1);
    double worst = 0;
    for (int s = 0; s < 200; ++s) {
      const int i = ri(rng), j = ci(rng);
      double ref = 0, mag = 0;
      for (int k = 0; k < sh.K; ++k) {
        const double p = double(sh.ta ? A[size_t(k) * a_cols + i] : A[size_t(i) * a_cols + k]) *
                         (sh.tb ? B[size_t(j) * b_cols + k] : B[size_t(k) * b_cols + j]);
        ref += p;
        mag += std::fabs(p);
      }
      worst = std::max(worst, std::fabs(C[size_t(i) * sh.N + j] - ref) / (2.0 * sh.K * 1.1920929e-7 * mag));
    }
    if (worst > 1.0) {
      std::printf("%-28s WRONG (err/tolerance %.3g)\n", sh.what, worst);
      ok = false;
      continue;
    }
    const double flops = 2.0 * sh.M * sh.N * double(sh.K);
    std::vector<std::function<void()>> runs{ours};
    if (ob.sgemm) runs.push_back(theirs);
    const std::vector<double> best = best_seconds(runs, min_time);
    const double g_ours = flops / best[0] * 1e-9;
    std::printf("%-28s %2d %2d %6d %6d %6d %10.1f", sh.what, sh.ta, sh.tb, sh.M, sh.N, sh.K, g_ours);
    if (ob.sgemm) {
      const double g_ob = flops / best[1] * 1e-9;
      std::printf(" %10.1f %7.0f%%", g_ob, 100.0 * g_ours / g_ob);
    }
    std::printf("\n");
    std::fflush(stdout);
  }
  return ok;
}

// The third table: AMP's GEMMs. gemm_f16 / gemm_bf16 with 16-bit operands widened to FP32 on
// the F32 kernels — the cost of storing the operands in 16 bits on a CPU that has no unit for
// them — against sgemm on the same shapes; then, where the CPU has one, gemm_bf16 on its BF16
// unit (AMX or VDPBF16PS, bf16_units.h), which is what BF16 autocast runs. Before timing,
// the widened results must equal sgemm's on the widened operands bit for bit (same kernel,
// same order of additions) and the unit's must equal its emulation bit for bit.
bool lowp_shapes(int threads, double min_time) {
  using hg::cpu::GemmKernel;
  hg::cpu::set_gemm_kernel(GemmKernel::Auto);
  const GemmKernel unit = hg::cpu::gemm_bf16_kernel(), f32_kernel = hg::cpu::gemm_kernel();
  const bool has_unit = unit == GemmKernel::Amx || unit == GemmKernel::Avx512Bf16;
  const std::string unit_name = has_unit ? hg::cpu::gemm_bf16_kernel_name() : "none";
  std::printf("\nthe same shapes with 16-bit operands (%d threads): widened to F32 on the %s kernel, and "
              "BF16 on this CPU's BF16 unit (%s); time in ms, ratio = time / FP32 time\n",
              threads, hg::cpu::gemm_kernel_name(), unit_name.c_str());
  std::printf("%-28s %2s %2s %6s %6s %6s %9s %9s %9s %9s %7s %7s %7s\n", "", "tA", "tB", "M", "N", "K", "f32 ms",
              "f16 ms", "bf16 ms", "unit ms", "f16/f32", "bf16/f32", "unit/f32");
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  bool ok = true;
  double total[4] = {0, 0, 0, 0};
  for (const Shape& sh : kTrainingShapes) {
    const int64_t a_cols = sh.ta ? sh.M : sh.K, b_cols = sh.tb ? sh.K : sh.N;
    const size_t na = size_t(sh.M) * sh.K, nb = size_t(sh.K) * sh.N, nc = size_t(sh.M) * sh.N;
    std::vector<float> A(na), B(nb), C(nc), A16(na), B16(nb), Ab(na), Bb(nb), Cw(nc);
    std::vector<hg::half> Ah(na), Bh(nb);
    std::vector<hg::bfloat16> Abf(na), Bbf(nb);
    for (auto& v : A) v = U(rng);
    for (auto& v : B) v = U(rng);
    for (size_t i = 0; i < na; ++i) Ah[i] = hg::half(A[i]), Abf[i] = hg::bfloat16(A[i]);
    for (size_t i = 0; i < nb; ++i) Bh[i] = hg::half(B[i]), Bbf[i] = hg::bfloat16(B[i]);
    for (size_t i = 0; i < na; ++i) A16[i] = float(Ah[i]), Ab[i] = float(Abf[i]);
    for (size_t i = 0; i < nb; ++i) B16[i] = float(Bh[i]), Bb[i] = float(Bbf[i]);
    auto f32 = [&] {
      hg::cpu::sgemm(sh.ta, sh.tb, sh.M, sh.N, sh.K, 1.f, A.data(), a_cols, B.data(), b_cols, 0.f,
                     C.data(), sh.N);
    };
    auto f16 = [&] {
      hg::cpu::gemm_f16(sh.ta, sh.tb, sh.M, sh.N, sh.K, 1.f, Ah.data(), a_cols, Bh.data(), b_cols,
                        0.f, C.data(), sh.N);
    };
    auto bf16_on = [&](GemmKernel k) {
      return [&, k] {
        hg::cpu::set_gemm_kernel(k);
        hg::cpu::gemm_bf16(sh.ta, sh.tb, sh.M, sh.N, sh.K, 1.f, Abf.data(), a_cols, Bbf.data(), b_cols, 0.f,
                           C.data(), sh.N);
        hg::cpu::set_gemm_kernel(GemmKernel::Auto);
      };
    };
    // validate: bit for bit against sgemm on the widened operands, and the unit's emulation
    int64_t mismatches = 0;
    hg::cpu::sgemm(sh.ta, sh.tb, sh.M, sh.N, sh.K, 1.f, A16.data(), a_cols, B16.data(), b_cols, 0.f,
                   Cw.data(), sh.N);
    f16();
    for (size_t i = 0; i < nc; ++i) mismatches += C[i] != Cw[i];
    hg::cpu::sgemm(sh.ta, sh.tb, sh.M, sh.N, sh.K, 1.f, Ab.data(), a_cols, Bb.data(), b_cols, 0.f,
                   Cw.data(), sh.N);
    bf16_on(f32_kernel)();
    for (size_t i = 0; i < nc; ++i) mismatches += C[i] != Cw[i];
    if (has_unit) {
      hg::cpu::gemm_bf16_emulated(unit, sh.ta, sh.tb, sh.M, sh.N, sh.K, 1.f, Abf.data(), a_cols, Bbf.data(),
                                  b_cols, 0.f, Cw.data(), sh.N);
      bf16_on(unit)();
      for (size_t i = 0; i < nc; ++i) mismatches += std::memcmp(&C[i], &Cw[i], 4) != 0;
    }
    if (mismatches) {
      std::printf("%-28s WRONG (%lld entries differ from their reference)\n", sh.what, (long long)mismatches);
      ok = false;
      continue;
    }
    std::vector<std::function<void()>> runs{f32, f16, bf16_on(f32_kernel)};
    if (has_unit) runs.push_back(bf16_on(unit));
    std::vector<double> best = best_seconds(runs, min_time);
    if (!has_unit) best.push_back(0);
    for (int q = 0; q < 4; ++q) total[q] += best[size_t(q)];
    std::printf("%-28s %2d %2d %6d %6d %6d %9.3f %9.3f %9.3f ", sh.what, sh.ta, sh.tb, sh.M, sh.N, sh.K,
                best[0] * 1e3, best[1] * 1e3, best[2] * 1e3);
    if (has_unit) std::printf("%9.3f %7.2f %7.2f %7.2f\n", best[3] * 1e3, best[1] / best[0], best[2] / best[0], best[3] / best[0]);
    else std::printf("%9s %7.2f %7.2f %7s\n", "-", best[1] / best[0], best[2] / best[0], "-");
    std::fflush(stdout);
  }
  if (ok) {
    std::printf("%-28s %2s %2s %6s %6s %6s %9.3f %9.3f %9.3f ", "all shapes (sum)", "", "", "", "", "",
                total[0] * 1e3, total[1] * 1e3, total[2] * 1e3);
    if (has_unit) std::printf("%9.3f %7.2f %7.2f %7.2f\n", total[3] * 1e3, total[1] / total[0], total[2] / total[0], total[3] / total[0]);
    else std::printf("%9s %7.2f %7.2f %7s\n", "-", total[1] / total[0], total[2] / total[0], "-");
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"halfgrad sgemm vs OpenBLAS (C = A·B, square, row-major, FP32)"};
  std::vector<int> sizes{256, 512, 1024, 2048};
  int threads = 2;
  std::string kernels = "all";
  double min_time = 0.5;
  app.add_option("--sizes", sizes, "matrix sizes n (n×n times n×n)")->delimiter(',');
  app.add_option("--threads", threads, "OpenMP threads for both libraries")->check(CLI::Range(1, 256));
  app.add_option("--kernels", kernels, "all: every micro-kernel this CPU runs; best: the automatic one")
      ->check(CLI::IsMember({"all", "best"}));
  app.add_option("--min-time", min_time, "seconds of timing per entry (best repetition is kept)");
  bool training = true;
  app.add_flag("!--no-training", training, "skip the table of chapter 02's GEMM shapes");
  bool lowp = true, only_lowp = false;
  app.add_flag("!--no-lowp", lowp, "skip the table of gemm_f16/gemm_bf16 vs sgemm");
  app.add_flag("--only-lowp", only_lowp, "print only the table of gemm_f16/gemm_bf16 vs sgemm");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  omp_set_num_threads(threads);
  if (only_lowp) return lowp_shapes(threads, min_time) ? 0 : 1;
  const OpenBlas ob = load_openblas();
  if (ob.sgemm) {
    if (ob.set_num_threads) ob.set_num_threads(threads);
    std::printf("OpenBLAS: %s (%s, core %s)\n", ob.path.c_str(), ob.config ? ob.config() : "?",
                ob.corename ? ob.corename() : "?");
  } else {
    std::printf("OpenBLAS: NOT FOUND (looked for libopenblas.so.0 in "
                "/usr/lib/x86_64-linux-gnu/openblas-openmp/ and the loader path).\n"
                "          Install it with: apt-get install libopenblas0-openmp   "
                "(./lab bench does). Only halfgrad is timed below.\n");
  }

  using hg::cpu::GemmKernel;
  std::vector<GemmKernel> ks;
  if (kernels == "all") {
    for (GemmKernel k : {GemmKernel::Portable, GemmKernel::Avx2, GemmKernel::Avx512})
      if (hg::cpu::gemm_kernel_supported(k)) ks.push_back(k);
  } else {
    ks.push_back(GemmKernel::Auto);
  }
  std::vector<std::string> names;
  for (GemmKernel k : ks) {
    hg::cpu::set_gemm_kernel(k);
    names.push_back(hg::cpu::gemm_kernel_name());
  }
  hg::cpu::set_gemm_kernel(GemmKernel::Auto);
  const std::string best_name = hg::cpu::gemm_kernel_name();
  // The FP32 FMA peak of these threads (tests/bench/peak.h), the ceiling of every figure below.
  const double peak = hg::bench::measure_peak(hg::bench::Unit::Fp32Fma, threads);
  std::printf("threads: %d   automatic kernel: %s   GFLOP/s = 2·n³ / best time   FP32 FMA peak of %d "
              "thread(s), measured: %.0f GFLOP/s\n\n", threads, best_name.c_str(), threads, peak);

  // header
  std::printf("%6s", "n");
  for (const auto& nm : names) std::printf(" %12s", nm.c_str());
  std::printf(" %9s", "% peak");
  if (ob.sgemm) std::printf(" %12s %18s", "OpenBLAS", (best_name + "/OpenBLAS").c_str());
  std::printf("\n");

  std::mt19937 rng(2024);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  bool all_valid = true;
  for (int n : sizes) {
    const size_t nn = size_t(n) * n;
    std::vector<float> A(nn), B(nn), C(nn), Cref(nn);
    for (auto& v : A) v = U(rng);
    for (auto& v : B) v = U(rng);
    const double flops = 2.0 * double(n) * n * n;

    // 1. validate
    double ob_err = 0;
    if (ob.sgemm) {
      ob.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, A.data(), n, B.data(), n, 0.f,
               Cref.data(), n);
      ob_err = check_sampled(A, B, Cref, n, rng);
    }
    std::vector<double> gflops(ks.size());
    bool valid = ob_err <= 1.0;
    for (size_t q = 0; q < ks.size(); ++q) {
      hg::cpu::set_gemm_kernel(ks[q]);
      hg::cpu::sgemm(false, false, n, n, n, 1.f, A.data(), n, B.data(), n, 0.f, C.data(), n);
      const double err = check_sampled(A, B, C, n, rng);
      // Against OpenBLAS on every entry: two FP32 results may each be off by γ_n·Σ|a||b|,
      // and Σ|a||b| ≤ n here (|a|, |b| ≤ 1), so they agree within 2·n·eps·n.
      double vs_ob = 0;  // max |difference| / that bound
      if (ob.sgemm)
        for (size_t i = 0; i < nn; ++i)
          vs_ob = std::max(vs_ob, double(std::fabs(C[i] - Cref[i])) / (2.0 * n * 1.1920929e-7 * n));
      if (err > 1.0 || vs_ob > 1.0) {
        std::printf("n=%d kernel %s: WRONG (sampled err/tolerance %.3g, vs OpenBLAS diff/bound %.3g)\n",
                    n, names[q].c_str(), err, vs_ob);
        valid = false;
        continue;
      }
    }
    hg::cpu::set_gemm_kernel(GemmKernel::Auto);
    if (!valid) {
      all_valid = false;
      continue;
    }
    // 2. time: every kernel and OpenBLAS, taking turns
    std::vector<std::function<void()>> runs;
    for (size_t q = 0; q < ks.size(); ++q)
      runs.push_back([&, q] {
        hg::cpu::set_gemm_kernel(ks[q]);
        hg::cpu::sgemm(false, false, n, n, n, 1.f, A.data(), n, B.data(), n, 0.f, C.data(), n);
      });
    if (ob.sgemm)
      runs.push_back([&] {
        ob.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, A.data(), n, B.data(), n,
                 0.f, Cref.data(), n);
      });
    const std::vector<double> best = best_seconds(runs, min_time);
    hg::cpu::set_gemm_kernel(GemmKernel::Auto);
    for (size_t q = 0; q < ks.size(); ++q) gflops[q] = flops / best[q] * 1e-9;
    const double ob_gflops = ob.sgemm ? flops / best.back() * 1e-9 : 0.0;
    std::printf("%6d", n);
    double best_gf = 0;
    for (size_t q = 0; q < ks.size(); ++q) {
      std::printf(" %12.1f", gflops[q]);
      if (names[q] == best_name) best_gf = gflops[q];
    }
    std::printf(" %8.0f%%", 100.0 * best_gf / peak);
    if (ob.sgemm) std::printf(" %12.1f %17.0f%%", ob_gflops, 100.0 * best_gf / ob_gflops);
    std::printf("\n");
    std::fflush(stdout);
  }
  if (training) all_valid = training_shapes(ob, threads, min_time) && all_valid;
  if (lowp) all_valid = lowp_shapes(threads, min_time) && all_valid;
  if (!all_valid) {
    std::printf("\nsome results did not validate: no figure is printed for them\n");
    return 1;
  }
  return 0;
}
