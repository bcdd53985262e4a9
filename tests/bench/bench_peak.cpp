// bench_peak — ./lab bench peak: the measured peak of each arithmetic unit this CPU has,
// one thread per core, 1 thread and all cores: the ceilings the GEMM benchmarks divide by.
//
//   bench_peak [--threads N]      (default: every core the OpenMP runtime sees)
//   bench_peak --amp-goal
//
// --amp-goal prints the unit the engine runs BF16 matmuls and convolutions on (what
// gemm_bf16_kernel_name() says in this environment, HG_GEMM_KERNEL included) and the goal
// for BF16 AMP's time over FP32's that follows from it, for ./lab bench amp and gpt:
//
//   BF16 runs on        goal       why
//   amx                 <= 0.50x   TDPBF16PS: 14.6x the FP32 FMA peak on the Xeon measured (DESIGN.md)
//   avx512_bf16         <= 0.80x   where VDPBF16PS's measured peak is above FP32 FMA's
//                       <= 1.00x   where it is not: the gain is half the bytes moved
//                                  (both peaks on one thread: the "x fp32" column below)
//   an F32 kernel       none       BF16 is widened to F32: no unit, no speed-up to expect
//
// The goal follows the unit that runs, so HG_GEMM_KERNEL=avx512_bf16 on an AMX CPU checks
// the AVX512_BF16 goal there.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include "tests/bench/peak.h"

namespace {

// The two lines of --amp-goal: "BF16 unit: ..." and "BF16 AMP goal: <= X x FP32's time (why)"
// or "BF16 AMP goal: none (why)".
void print_amp_goal() {
  using hg::cpu::GemmKernel;
  const GemmKernel unit = hg::cpu::gemm_bf16_kernel();
  std::printf("BF16 unit: %s\n", hg::cpu::gemm_bf16_kernel_name().c_str());
  if (unit == GemmKernel::Amx) {
    std::printf("BF16 AMP goal: <= 0.50x FP32's time (AMX tiles, TDPBF16PS)\n");
  } else if (unit == GemmKernel::Avx512Bf16) {
    const double dp = hg::bench::measure_peak(hg::bench::Unit::Vdpbf16ps, 1);
    const double fma = hg::bench::measure_peak(hg::bench::Unit::Fp32Fma, 1);
    if (dp > fma)
      std::printf("BF16 AMP goal: <= 0.80x FP32's time (VDPBF16PS %.0f GFLOP/s above FP32 FMA's %.0f, one thread)\n",
                  dp, fma);
    else
      std::printf("BF16 AMP goal: <= 1.00x FP32's time (VDPBF16PS %.0f GFLOP/s, not above FP32 FMA's %.0f on "
                  "one thread: the gain is half the bytes)\n", dp, fma);
  } else {
    const bool has_unit = hg::cpu::gemm_kernel_supported(GemmKernel::Amx) ||
                          hg::cpu::gemm_kernel_supported(GemmKernel::Avx512Bf16);
    std::printf("BF16 AMP goal: none (%s)\n",
                has_unit ? "HG_GEMM_KERNEL chose an F32 kernel, which widens BF16 to F32"
                         : "this CPU has neither AMX nor AVX512_BF16: BF16 is widened to F32");
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"bench_peak: the measured peak of each arithmetic unit of this CPU"};
  int threads = omp_get_num_procs();
  bool amp_goal = false;
  app.add_option("--threads", threads, "threads for the second column (one per core)")->check(CLI::Range(1, 1024));
  app.add_flag("--amp-goal", amp_goal, "print only the BF16 unit and the goal for BF16 AMP's time over FP32's");
  CLI11_PARSE(app, argc, argv);
  if (amp_goal) {
    try {
      print_amp_goal();
    } catch (const std::exception& e) {  // e.g. HG_GEMM_KERNEL names a unit this CPU lacks
      std::fprintf(stderr, "bench_peak: %s\n", e.what());
      return 1;
    }
    return 0;
  }

  std::string cpu = "unknown CPU";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);)
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  std::printf("CPU: %s, %d cores seen\n", cpu.c_str(), omp_get_num_procs());
  std::printf("register-resident loops, one thread per core, best of 5 rounds of ~0.1 s\n\n");
  std::printf("%-10s %-24s %14s %14s %9s\n", "unit", "instruction", "1 thread", "", "x fp32");
  std::printf("%-10s %-24s %14s %11d thr %9s\n", "", "", "GFLOP/s", threads, "");
  double fp32[2] = {0, 0};
  for (auto u : {hg::bench::Unit::Fp32Fma, hg::bench::Unit::Vdpbf16ps, hg::bench::Unit::AmxBf16}) {
    const char* instr = u == hg::bench::Unit::Fp32Fma ? (hg::cpu::gemm_kernel_supported(hg::cpu::GemmKernel::Avx512)
                                                             ? "VFMADD231PS zmm" : "VFMADD231PS ymm")
                        : u == hg::bench::Unit::Vdpbf16ps ? "VDPBF16PS zmm" : "TDPBF16PS tile";
    if (!hg::bench::unit_present(u)) {
      const std::string why = u == hg::bench::Unit::AmxBf16
                                  ? hg::cpu::gemm_kernel_unavailable_reason(hg::cpu::GemmKernel::Amx)
                                  : "not on this CPU";
      std::printf("%-10s %-24s %s\n", hg::bench::unit_name(u), instr, why.c_str());
      continue;
    }
    const double one = hg::bench::measure_peak(u, 1), all = hg::bench::measure_peak(u, threads);
    if (u == hg::bench::Unit::Fp32Fma) fp32[0] = one, fp32[1] = all;
    std::printf("%-10s %-24s %14.0f %14.0f %8.1fx\n", hg::bench::unit_name(u), instr, one, all,
                fp32[0] > 0 ? one / fp32[0] : 0.0);
  }
  return 0;
}
