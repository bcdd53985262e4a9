// The FP8 scaled cast (framework/fp8/fp8_tensor.h) against NVIDIA's own conversion: the host
// code of cuda_fp8.h (__nv_cvt_float_to_fp8, what the GPU's cvt instructions compute),
// compiled here for the CPU. Both formats, both overflow modes, the codes compared bit for
// bit (a NaN too: both write 0x7f for every NaN).
//
//   fp8_vs_cuda --stride S   every S-th float32 bit pattern, at scale 1 and at six scales
//                            (x · scale rounded once in F32, then cast): the default test
//   fp8_vs_cuda --all        all 2^32 float32 bit patterns at scale 1 (every F32 input the
//                            cast can see, so every scaled input too). Minutes on 2 cores:
//                            a separate test, labelled "exhaustive", run with
//                            HG_EXHAUSTIVE=1 ctest -L exhaustive
// Prints the count per check and the first mismatch; exits 0 when there are none, 1 when
// there are, 77 (skipped) without the CUDA headers or, for --all, without HG_EXHAUSTIVE=1.
#include <omp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#if __has_include(<cuda_fp8.h>)
#include <cuda_fp8.h>
#define HG_HAVE_CUDA_FP8 1
#else
#define HG_HAVE_CUDA_FP8 0
#endif

#include "framework/fp8/fp8_tensor.h"

namespace {

int usage() {
  std::fprintf(stderr, "usage: fp8_vs_cuda --stride S (S >= 1) | --all\n");
  return 2;
}

}  // namespace

#if HG_HAVE_CUDA_FP8
namespace {

using hg::Fp8Overflow;
using hg::fp8::Format;

struct Mode {
  const char* name;
  Format format;
  Fp8Overflow overflow;
  __nv_fp8_interpretation_t cuda_format;
  __nv_saturation_t cuda_overflow;
};
constexpr Mode kModes[4] = {
    {"E4M3 saturating", Format::E4M3, Fp8Overflow::Saturate, __NV_E4M3, __NV_SATFINITE},
    {"E4M3 non-saturating", Format::E4M3, Fp8Overflow::NonSaturating, __NV_E4M3, __NV_NOSAT},
    {"E5M2 saturating", Format::E5M2, Fp8Overflow::Saturate, __NV_E5M2, __NV_SATFINITE},
    {"E5M2 non-saturating", Format::E5M2, Fp8Overflow::NonSaturating, __NV_E5M2, __NV_NOSAT},
};

float float_of(uint32_t u) { float x; std::memcpy(&x, &u, 4); return x; }

struct Result {
  uint64_t checked = 0, bad = 0, first_bad = UINT64_MAX;
};

// Every stride-th bit pattern u, x = float(u), against cvt(x · scale).
Result sweep(const Mode& m, float scale, uint64_t stride) {
  Result r;
  const int64_t n = int64_t(((uint64_t{1} << 32) + stride - 1) / stride);
  uint64_t bad = 0, first = UINT64_MAX;
#pragma omp parallel for schedule(static) reduction(+ : bad) reduction(min : first)
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t u = uint64_t(i) * stride;
    const float x = float_of(uint32_t(u));
    const uint8_t cuda = __nv_cvt_float_to_fp8(x * scale, m.cuda_overflow, m.cuda_format);
    const uint8_t ours = hg::fp8::scaled_cast(x, scale, m.format, m.overflow);
    if (cuda != ours) {  // the same code, NaN included (0x7f for every NaN)
      ++bad;
      if (u < first) first = u;
    }
  }
  r.checked = uint64_t(n);
  r.bad = bad;
  r.first_bad = first;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t stride = 0;
  if (argc == 2 && std::string(argv[1]) == "--all") {
    stride = 1;
    const char* on = std::getenv("HG_EXHAUSTIVE");
    if (!on || std::string(on) != "1") {
      std::printf("SKIP: the sweep of all 2^32 inputs takes minutes; run it with "
                  "HG_EXHAUSTIVE=1 ctest -L exhaustive\n");
      return 77;
    }
  } else if (argc == 3 && std::string(argv[1]) == "--stride") {
    char* end = nullptr;
    const long long s = std::strtoll(argv[2], &end, 10);
    if (*end != '\0' || s < 1) return usage();
    stride = uint64_t(s);
  } else {
    return usage();
  }
  // Scale 1 (the plain cast), then scales as recipes make them: powers of two (delayed
  // scaling with a margin, MX), and amax-derived ones whose product x · scale rounds.
  const float scales[] = {1.0f, 0.0078125f, 4096.0f, 448.0f / 3.3f, 57344.0f / 0.001f, 0.75f, 1.0f / 7.0f};
  const int n_scales = stride == 1 ? 1 : int(sizeof scales / sizeof scales[0]);
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t total_bad = 0;
  for (const Mode& m : kModes)
    for (int s = 0; s < n_scales; ++s) {
      const Result r = sweep(m, scales[s], stride);
      total_bad += r.bad;
      std::printf("%-20s scale %-12.9g %11llu inputs  %llu mismatches", m.name, double(scales[s]),
                  (unsigned long long)r.checked, (unsigned long long)r.bad);
      if (r.bad) {
        const float x = float_of(uint32_t(r.first_bad));
        std::printf("  (first: x = 0x%08x = %.9g: CUDA 0x%02x, halfgrad 0x%02x)", uint32_t(r.first_bad), double(x),
                    unsigned(__nv_cvt_float_to_fp8(x * scales[s], m.cuda_overflow, m.cuda_format)),
                    unsigned(hg::fp8::scaled_cast(x, scales[s], m.format, m.overflow)));
      }
      std::printf("\n");
    }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %llu mismatches (%.1f s, %d threads)\n", total_bad ? "NOT OK" : "OK",
              (unsigned long long)total_bad, secs, omp_get_max_threads());
  return total_bad ? 1 : 0;
}
#else
int main(int argc, char** argv) {
  if (!(argc == 2 && std::string(argv[1]) == "--all") && !(argc == 3 && std::string(argv[1]) == "--stride"))
    return usage();
  std::printf("SKIP: cuda_fp8.h was not found (CMake looks in the CUDA toolkit's include folder), so "
              "NVIDIA's conversions are not available to compare with\n");
  return 77;
}
#endif
