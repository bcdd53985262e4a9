// The F32 <-> F16/BF16 block kernels (framework/cpu/convert_kernel.h): each kernel this CPU
// can run is first checked against framework/dtype's reference conversions, then timed.
// Prints one row per kernel (nanoseconds per value, best of 5) and which kernel the library
// uses. No number is printed for a kernel that did not just match the reference.
//
//   bench_convert [--n 65536] [--reps 200] [--which]   (--which: only the line "in use")
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "framework/cpu/convert_kernel.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"

using hg::cpu::ConvertKernel;

namespace {

uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
float float_of(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// Validation: all 65,536 16-bit patterns widened, and 2^20 floats spread over every exponent
// (plus their neighbours: ties, subnormals, overflow, NaN payloads) narrowed, each against
// the reference of framework/dtype. Returns the first failure, or "".
std::string validate(const ConvertKernel& k) {
  std::vector<uint16_t> h(65536), got16(65536);
  std::vector<float> f(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i] = uint16_t(i);
  k.f16_to_f32(h.data(), f.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i)
    if (bits_of(f[i]) != bits_of(hg::half_bits_to_float(uint16_t(i)))) return "F16 -> F32 of " + std::to_string(i);
  k.bf16_to_f32(h.data(), f.data(), 65536);
  for (uint32_t i = 0; i < 65536; ++i)
    if (bits_of(f[i]) != bits_of(hg::bf16_bits_to_float(uint16_t(i)))) return "BF16 -> F32 of " + std::to_string(i);
  std::vector<float> x(1 << 20);
  for (uint32_t i = 0; i < x.size(); ++i) x[i] = float_of(i * 4099u + (i & 0xFFFu));  // every exponent, low bits varied
  std::vector<uint16_t> out(x.size());
  k.f32_to_f16(x.data(), out.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    if (out[i] != hg::float_to_half_bits(x[i])) return "F32 -> F16 of bits " + std::to_string(bits_of(x[i]));
  k.f32_to_bf16(x.data(), out.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    if (out[i] != hg::float_to_bf16_bits(x[i])) return "F32 -> BF16 of bits " + std::to_string(bits_of(x[i]));
  return "";
}

// Nanoseconds per value of fn over n values, best of 5 batches of reps calls.
template <class Fn> double ns_per_value(Fn fn, int64_t n, int reps) {
  double best = 1e30;
  for (int b = 0; b < 5; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) fn();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, 1e9 * s / (double(reps) * double(n)));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"F32 <-> F16/BF16 block conversion kernels: validated, then timed"};
  int64_t n = 65536;
  int reps = 200;
  bool which = false;
  app.add_option("--n", n, "values per call")->capture_default_str()->check(CLI::Range(int64_t(1), int64_t(1) << 26));
  app.add_option("--reps", reps, "calls per timed batch")->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_flag("--which", which, "print only which kernel the library uses on this CPU");
  CLI11_PARSE(app, argc, argv);

  const auto kernels = hg::cpu::supported_convert_kernels();
  std::string names;
  for (const ConvertKernel* k : kernels) names += std::string(" ") + k->name;
  std::printf("conversion kernel in use: %s (this CPU can run:%s)\n", hg::cpu::convert_kernel().name, names.c_str());
  if (which) return 0;

  std::vector<float> f(size_t(n), 0.f);
  std::vector<uint16_t> h(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) f[size_t(i)] = float(i % 1000) * 0.01f - 5.f;  // activations-like
  std::printf("%-12s %11s %11s %11s %11s   ns per value, %lld values per call\n", "kernel", "F32->F16",
              "F16->F32", "F32->BF16", "BF16->F32", (long long)n);
  int failed = 0;
  for (const ConvertKernel* k : kernels) {
    const std::string bad = validate(*k);
    if (!bad.empty()) {
      std::printf("%-12s NOT OK: differs from the reference at %s; not timed\n", k->name, bad.c_str());
      ++failed;
      continue;
    }
    const double a = ns_per_value([&] { k->f32_to_f16(f.data(), h.data(), n); }, n, reps);
    const double b = ns_per_value([&] { k->f16_to_f32(h.data(), f.data(), n); }, n, reps);
    const double c = ns_per_value([&] { k->f32_to_bf16(f.data(), h.data(), n); }, n, reps);
    const double d = ns_per_value([&] { k->bf16_to_f32(h.data(), f.data(), n); }, n, reps);
    std::printf("%-12s %11.3f %11.3f %11.3f %11.3f   OK (same bits as the reference)\n", k->name, a, b, c, d);
  }
  return failed ? 1 : 0;
}
