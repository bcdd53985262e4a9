// bench_peak — ./lab bench peak: the measured peak of each arithmetic unit this CPU has,
// one thread per core, 1 thread and all cores: the ceilings the GEMM benchmarks divide by.
//
//   bench_peak [--threads N]      (default: every core the OpenMP runtime sees)
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "tests/bench/peak.h"

int main(int argc, char** argv) {
  CLI::App app{"bench_peak: the measured peak of each arithmetic unit of this CPU"};
  int threads = omp_get_num_procs();
  app.add_option("--threads", threads, "threads for the second column (one per core)")->check(CLI::Range(1, 1024));
  CLI11_PARSE(app, argc, argv);

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
