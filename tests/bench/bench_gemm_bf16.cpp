// bench_gemm_bf16 — the CPU's GEMM rungs for BF16, side by side in one run, each as a share of
// its own unit's measured peak (tests/bench/peak.h):
//
//   rung          operands      arithmetic                       peak it is measured against
//   f32 sgemm     F32           FP32 FMA (avx512 / avx2)         fp32_fma
//   bf16 widened  BF16 -> F32   FP32 FMA, BF16 widened on packing fp32_fma
//   avx512_bf16   BF16 pairs    VDPBF16PS                        vdpbf16ps
//   amx           BF16 tiles    TDPBF16PS                        amx_bf16
//
//   bench_gemm_bf16 [--sizes 1024,2048,4096] [--threads 1,2] [--min-time 0.3]
//
// Validate before timing: each rung's C must equal, on 256 sampled elements, its reference
// bit for bit — the emulation of the unit (gemm_bf16_emulated) for avx512_bf16 and amx, sgemm
// on the widened operands for the F32 rungs — or the row prints WRONG and no figure.
// The goals (PASS / NOT MET): amx >= 70% of the AMX peak, avx512_bf16 >= 80% of its peak, at
// every size and thread count.
#include <CLI/CLI.hpp>
#include <functional>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "framework/cpu/bf16_units.h"
#include "framework/dtype/bfloat16.h"
#include "tests/bench/peak.h"

namespace {

using hg::bfloat16;
using hg::cpu::GemmKernel;

struct Rung {
  const char* name;
  GemmKernel kernel;  // forced with set_gemm_kernel; Auto = the F32 sgemm rung
  hg::bench::Unit unit;
  double goal;  // share of the peak, 0: none
};

double best_seconds(const std::function<void()>& run, double min_time) {
  run();  // warm-up: packing buffers, the tile permission, page faults
  double best = 1e30, total = 0;
  for (int r = 0; r < 3 || total < min_time; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s), total += s;
  }
  return best;
}

uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_gemm_bf16: BF16 GEMM on the CPU's units, as a share of each unit's peak"};
  std::vector<int> sizes{1024, 2048, 4096}, thread_counts{1, omp_get_num_procs()};
  double min_time = 0.3;
  app.add_option("--sizes", sizes, "n of the n×n×n products")->delimiter(',');
  app.add_option("--threads", thread_counts, "thread counts")->delimiter(',');
  app.add_option("--min-time", min_time, "seconds of timing per rung and size");
  CLI11_PARSE(app, argc, argv);

  const GemmKernel f32 = hg::cpu::gemm_kernel();
  const Rung rungs[] = {{"f32 sgemm", GemmKernel::Auto, hg::bench::Unit::Fp32Fma, 0},
                        {"bf16 widened", f32, hg::bench::Unit::Fp32Fma, 0},
                        {"avx512_bf16", GemmKernel::Avx512Bf16, hg::bench::Unit::Vdpbf16ps, 0.8},
                        {"amx", GemmKernel::Amx, hg::bench::Unit::AmxBf16, 0.7}};
  bool all_met = true, any_goal = false;
  for (int threads : thread_counts) {
    double peak[3];
    for (auto u : {hg::bench::Unit::Fp32Fma, hg::bench::Unit::Vdpbf16ps, hg::bench::Unit::AmxBf16})
      peak[int(u)] = hg::bench::measure_peak(u, threads);
    std::printf("\n%d thread%s — measured peaks (GFLOP/s): fp32_fma %.0f, vdpbf16ps %.0f, amx_bf16 %.0f\n", threads,
                threads > 1 ? "s" : "", peak[0], peak[1], peak[2]);
    std::printf("%6s  %-13s %10s %10s %8s %9s  %s\n", "n", "rung", "ms", "GFLOP/s", "% peak", "x f32", "goal");
    omp_set_num_threads(threads);
    for (int n : sizes) {
      std::mt19937 rng{uint32_t(n)};
      std::uniform_real_distribution<float> U(-1.f, 1.f);
      std::vector<float> Af(size_t(n) * n), Bf(Af.size()), C(Af.size());
      std::vector<bfloat16> A(Af.size()), B(Af.size());
      for (size_t i = 0; i < Af.size(); ++i) A[i] = bfloat16(U(rng)), Af[i] = float(A[i]);
      for (size_t i = 0; i < Bf.size(); ++i) B[i] = bfloat16(U(rng)), Bf[i] = float(B[i]);
      const double flops = 2.0 * n * n * double(n);
      double f32_seconds = 0;
      for (const Rung& r : rungs) {
        if (!hg::bench::unit_present(r.unit) || (r.kernel != GemmKernel::Auto && !hg::cpu::gemm_kernel_supported(r.kernel))) {
          std::printf("%6d  %-13s %s\n", n, r.name, "not on this CPU");
          continue;
        }
        hg::cpu::set_gemm_kernel(r.kernel);
        const bool unit = r.kernel == GemmKernel::Avx512Bf16 || r.kernel == GemmKernel::Amx;
        auto run = [&] {
          if (r.kernel == GemmKernel::Auto) hg::cpu::sgemm(false, false, n, n, n, 1.f, Af.data(), n, Bf.data(), n, 0.f, C.data(), n);
          else hg::cpu::gemm_bf16(false, false, n, n, n, 1.f, A.data(), n, B.data(), n, 0.f, C.data(), n);
        };
        run();
        // validate 256 sampled elements against the reference of this rung, bit for bit
        int wrong = 0;
        std::vector<float> row_ref(size_t(n));
        if (!unit && r.kernel != GemmKernel::Auto) {
          std::vector<float> ref(C.size());
          hg::cpu::sgemm(false, false, n, n, n, 1.f, Af.data(), n, Bf.data(), n, 0.f, ref.data(), n);
          for (int s = 0; s < 256; ++s) {
            const size_t e = size_t(rng()) % C.size();
            wrong += bits(C[e]) != bits(ref[e]);
          }
        } else if (unit) {
          for (int s = 0; s < 256; ++s) {
            const int i = int(rng() % uint32_t(n)), j = int(rng() % uint32_t(n));
            float want = 0;
            hg::cpu::gemm_bf16_emulated(r.kernel, false, false, 1, 1, n, 1.f, A.data() + size_t(i) * n, n,
                                        B.data() + j, n, 0.f, &want, 1);
            wrong += bits(C[size_t(i) * n + j]) != bits(want);
          }
        }
        if (wrong) {
          std::printf("%6d  %-13s WRONG: %d of 256 sampled elements differ from the reference\n", n, r.name, wrong);
          all_met = false;
          continue;
        }
        const double s = best_seconds(run, min_time);
        if (r.kernel == GemmKernel::Auto) f32_seconds = s;
        const double gflops = flops / s * 1e-9, share = gflops / peak[int(r.unit)];
        std::printf("%6d  %-13s %10.2f %10.0f %7.0f%% %8.2fx  ", n, r.name, s * 1e3, gflops, 100 * share,
                    f32_seconds > 0 ? f32_seconds / s : 0.0);
        if (r.goal > 0) {
          any_goal = true;
          all_met &= share >= r.goal;
          std::printf("%s (>= %.0f%%)", share >= r.goal ? "PASS" : "NOT MET", 100 * r.goal);
        }
        std::printf("\n");
        std::fflush(stdout);
      }
    }
  }
  hg::cpu::set_gemm_kernel(GemmKernel::Auto);
  std::printf("\n%s\n", !any_goal ? "no BF16 unit on this CPU: no goal to check"
                        : all_met ? "every goal met" : "some goal NOT MET");
  return 0;
}
