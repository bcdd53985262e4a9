// framework/cpu/convert_kernel: every block kernel this CPU can run (portable, f16c, avx512,
// avx512_bf16) gives the bits of framework/dtype's conversions for every input.
//   - F16 -> F32 and BF16 -> F32: all 65,536 patterns, in runs of every length 1..33 (every
//     tail of the 8- and 16-wide loops), against the reference (convert_bits), NaN payload
//     and quiet bit included; nothing is written past the end.
//   - F32 -> F16: floats against the F16C instruction called here (test_dtype_half shows
//     that the reference gives the F16C bits for every float). Exit 77 without F16C.
//   - F32 -> BF16: floats against the FPU's own rounding (below), which shares no code with
//     the library.
//   Both narrowings run on blocks of 65,536 consecutive floats (every pattern of the low 16
//   bits: every tie, every sticky bit): all blocks of subnormals, infs and NaNs (every
//   payload), and 16 of the 128 blocks of each other exponent and sign (the first three,
//   the last three, the two around the middle and 8 more), 2^29.1 floats in all, a few
//   seconds. HG_TEST_ALL_FLOATS=1 runs all 2^32 (half a minute on 2 cores).
//   - vcvtneps2bf16 on its own flushes subnormal inputs to zero; the avx512_bf16 kernel does
//     not (exit 77 on a CPU without AVX512_BF16).
// The portable kernel is fast_convert.h one value at a time: hg::half and hg::bfloat16 use
// the same functions, so these tests cover them too.
#include <doctest/doctest.h>

#if defined(__x86_64__)
#include <immintrin.h>
#define HG_TEST_X86 1
#else
#define HG_TEST_X86 0
#endif

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/cpu/convert_kernel.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"
#include "tests/unit/test_dtype_reference.h"

using hg::cpu::ConvertKernel;

namespace {

void skip(const char* why) {
  std::printf("SKIP: %s\n", why);
  std::fflush(stdout);
  std::exit(77);
}

std::string kernel_names() {
  std::string s;
  for (const ConvertKernel* k : hg::cpu::supported_convert_kernels()) s += std::string(k->name) + " ";
  return s;
}

// ---- references ------------------------------------------------------------------------
#if HG_TEST_X86
bool cpu_f16c() { return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c"); }
bool cpu_avx512_bf16() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
}
// The F16C instruction itself, compiled here, not through the library.
__attribute__((target("avx,f16c"))) void hw_float_to_half8(const float* src, uint16_t* dst) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                   _mm256_cvtps_ph(_mm256_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT));
}
// vcvtneps2bf16 alone, without the kernel's correction.
__attribute__((target("avx512f,avx512bf16"))) void hw_float_to_bf16_16(const float* src, uint16_t* dst) {
  const __m256i h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_loadu_ps(src)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), h);
}
#else
bool cpu_f16c() { return false; }
bool cpu_avx512_bf16() { return false; }
void hw_float_to_half8(const float*, uint16_t*) {}
void hw_float_to_bf16_16(const float*, uint16_t*) {}
#endif

// F32 -> BF16 by the FPU: BF16 keeps 8 significant bits, so x rounds to a multiple of
// q = 2^(e-7), e = x's exponent (at least -126: subnormals share the smallest exponent).
// Adding M = 1.5·2^52·q in double lands the sum where doubles are exactly q apart, so the
// FPU rounds it there (nearest, ties to even: M/q is even, so the parity of the multiple is
// x's); subtracting M back is exact. A result of 2^128 overflows the float to inf, as BF16
// does. One block of 65,536 floats shares sign, exponent and the top 7 mantissa bits, so M
// is computed once per block (hi = the top 16 bits).
double bf16_magic(uint32_t hi) {
  const int field = int((hi >> 7) & 0xFF);
  const int e = field == 0 ? -126 : field - 127;
  return 1.5 * std::ldexp(1.0, 52 + e - 7);
}
uint16_t fpu_float_to_bf16(float x, double magic) {
  const uint32_t u = ref::bits_of(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x40);  // NaN: quiet, payload kept
  if ((u & 0x7FFFFFFFu) == 0x7F800000u) return uint16_t(u >> 16);           // ±inf
  const double r = std::copysign((double(x) + magic) - magic, double(x));   // ±0 keeps its sign
  return uint16_t(ref::bits_of(float(r)) >> 16);                            // exact, or inf
}

// ---- the widenings: 65,536 patterns, every run length -------------------------------------
using Widen = void (*)(const uint16_t*, float*, int64_t);

void check_widen(const char* kernel, const char* what, Widen widen, float (*reference)(uint16_t)) {
  std::vector<uint16_t> src(65536);
  for (uint32_t i = 0; i < 65536; ++i) src[i] = uint16_t(i);
  for (int64_t run = 1; run <= 33; ++run) {
    std::vector<float> out(65536 + 1, -7.f);
    for (int64_t i = 0; i < 65536; i += run) widen(src.data() + i, out.data() + i, std::min<int64_t>(run, 65536 - i));
    int64_t bad = 0;
    uint32_t first = 0;
    for (uint32_t i = 0; i < 65536; ++i)
      if (ref::bits_of(out[i]) != ref::bits_of(reference(uint16_t(i))) && bad++ == 0) first = i;
    INFO(kernel, " ", what, ", runs of ", run, ": ", bad, " patterns differ, first ",
         ref::hex(first, 4), " -> ", ref::hex(ref::bits_of(out[first]), 8), " (reference ",
         ref::hex(ref::bits_of(reference(uint16_t(first))), 8), ")");
    CHECK(bad == 0);
    CHECK(out[65536] == -7.f);  // nothing written past the end
  }
}

// ---- the narrowings: blocks of 65,536 floats ------------------------------------------------
// A block is the floats whose top 16 bits are hi: sign, exponent, top 7 mantissa bits.
bool block_checked(uint32_t hi) {
  static const bool all = [] {
    const char* e = std::getenv("HG_TEST_ALL_FLOATS");
    return e != nullptr && std::string(e) == "1";
  }();
  const uint32_t exponent = (hi >> 7) & 0xFF, top7 = hi & 0x7F;
  if (all || exponent == 0 || exponent == 0xFF) return true;  // subnormals, ±inf, NaN payloads
  return top7 <= 2 || top7 >= 0x7D || top7 == 0x3F || top7 == 0x40 || top7 % 16 == 7;
}

// For each checked block: every kernel's narrowing against the expected bits, called on runs
// of 4096 - r and r values (r = 1..40 varies with the block, so every tail of the 8- and
// 16-wide loops is used). Prints the first mismatch of each kernel.
using Narrow = void (*)(const float*, uint16_t*, int64_t);

template <class Expect>
void check_narrow_all_floats(const char* what, Narrow ConvertKernel::*narrow, Expect expect) {
  const auto kernels = hg::cpu::supported_convert_kernels();
  std::vector<ref::Mismatches> bad(kernels.size());
#pragma omp parallel
  {
    std::vector<float> in(65536);
    std::vector<uint16_t> want(65536), got(65536);
#pragma omp for schedule(dynamic, 64)
    for (int64_t hi = 0; hi < 65536; ++hi) {
      if (!block_checked(uint32_t(hi))) continue;
      const uint32_t base = uint32_t(hi) << 16;
      for (uint32_t lo = 0; lo < 65536; ++lo) in[lo] = ref::float_of(base | lo);
      expect(uint32_t(hi), in.data(), want.data());
      const int64_t run = 1 + hi % 40;  // 1..40: every tail of 8 and 16 lanes
      for (size_t k = 0; k < kernels.size(); ++k) {
        const Narrow f = kernels[k]->*narrow;
        for (int64_t i = 0; i < 65536; i += 4096) {  // a long run, then a short one
          f(in.data() + i, got.data() + i, 4096 - run);
          f(in.data() + i + 4096 - run, got.data() + i + 4096 - run, run);
        }
        for (uint32_t lo = 0; lo < 65536; ++lo)
          if (got[lo] != want[lo]) bad[k].add(base | lo);
      }
    }
  }
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (bad[k].count) {
      const uint32_t u = uint32_t(bad[k].first.load());
      std::vector<float> in(65536);
      std::vector<uint16_t> want(65536), got(1);
      for (uint32_t lo = 0; lo < 65536; ++lo) in[lo] = ref::float_of((u & 0xFFFF0000u) | lo);
      expect(u >> 16, in.data(), want.data());
      (kernels[k]->*narrow)(&in[u & 0xFFFF], got.data(), 1);
      std::printf("%s, kernel %s: %llu mismatches; first float %s (%.9g) -> %s, expected %s\n", what,
                  kernels[k]->name, (unsigned long long)bad[k].count.load(), ref::hex(u, 8).c_str(),
                  double(ref::float_of(u)), ref::hex(got[0], 4).c_str(), ref::hex(want[u & 0xFFFF], 4).c_str());
    }
    INFO("kernel ", kernels[k]->name);
    CHECK(bad[k].count == 0);
  }
  int64_t blocks = 0;
  for (uint32_t hi = 0; hi < 65536; ++hi) blocks += block_checked(hi);
  MESSAGE((std::string(what) + ": kernels checked on " + std::to_string(blocks) + " blocks of 65536 floats: " +
           kernel_names()));
  CHECK(blocks >= 8000);  // the selection above, not an empty loop
}

}  // namespace

TEST_CASE("convert kernels: the best is chosen, and the portable one is always there") {
  const auto kernels = hg::cpu::supported_convert_kernels();
  REQUIRE(!kernels.empty());
  CHECK(std::string(kernels.front()->name) == "portable");
  CHECK(&hg::cpu::convert_kernel() == kernels.back());
  MESSAGE(("this CPU: " + kernel_names() + "(in use: " + hg::cpu::convert_kernel().name + ")"));
}

TEST_CASE("convert kernels: F16 -> F32 and BF16 -> F32, all 65536 patterns, every tail") {
  for (const ConvertKernel* k : hg::cpu::supported_convert_kernels()) {
    check_widen(k->name, "F16 -> F32", k->f16_to_f32, hg::half_bits_to_float);
    check_widen(k->name, "BF16 -> F32", k->bf16_to_f32, hg::bf16_bits_to_float);
  }
}

TEST_CASE("convert kernels: F32 -> F16 on 2^29 float32 bit patterns equals the F16C instruction") {
  if (!cpu_f16c()) skip("this CPU has no F16C instructions, the reference of this test");
  check_narrow_all_floats("F32 -> F16", &ConvertKernel::f32_to_f16,
                          [](uint32_t, const float* in, uint16_t* want) {
                            for (int i = 0; i < 65536; i += 8) hw_float_to_half8(in + i, want + i);
                          });
}

TEST_CASE("convert kernels: F32 -> BF16 on 2^29 float32 bit patterns equals the FPU's rounding") {
  check_narrow_all_floats("F32 -> BF16", &ConvertKernel::f32_to_bf16,
                          [](uint32_t hi, const float* in, uint16_t* want) {
                            const double magic = bf16_magic(hi);
                            for (int i = 0; i < 65536; ++i) want[i] = fpu_float_to_bf16(in[i], magic);
                          });
}

TEST_CASE("convert kernels: the FPU reference for BF16 agrees with framework/dtype on its hard cases") {
  // Ties both ways, the carry into the exponent, overflow to inf, subnormals, ±0, NaN.
  const float cases[] = {1.0f, 0x1.008p0f, 0x1.018p0f, 0x1.00fffep0f, 0x1.ff8p0f, 0x1.fffffep127f,
                         0x1.fe8p127f, 0x1.fe7ffep127f, 0x1p-149f, 0x1.8p-133f, 0x1p-134f,
                         0x1.fffffcp-127f, -0.0f, 0.0f, -3.5f, INFINITY, -INFINITY,
                         ref::float_of(0x7F800001u), ref::float_of(0xFFC12345u)};
  for (float x : cases) {
    const uint32_t u = ref::bits_of(x);
    INFO("float ", ref::hex(u, 8));
    CHECK(fpu_float_to_bf16(x, bf16_magic(u >> 16)) == hg::float_to_bf16_bits(x));
  }
}

TEST_CASE("convert kernels: vcvtneps2bf16 flushes subnormal inputs to zero, the avx512_bf16 kernel rounds them") {
  if (!cpu_avx512_bf16()) skip("this CPU has no AVX512_BF16 instructions");
  const ConvertKernel* bf16 = nullptr;
  for (const ConvertKernel* k : hg::cpu::supported_convert_kernels())
    if (std::string(k->name) == "avx512_bf16") bf16 = k;
  REQUIRE(bf16 != nullptr);
  // 16 inputs: subnormals of both signs (including the largest, which rounds up to the
  // smallest normal), then normal values, zero and a NaN, which the instruction gets right.
  const float x[16] = {0x1p-133f, -0x1p-128f, 0x1.8p-133f, 0x1.fffffcp-127f, -0x1.234p-130f,
                       0x1p-126f, 1.0f, -2.5f, 0.0f, -0.0f, 0x1.ff8p0f, 65504.0f, INFINITY,
                       ref::float_of(0x7F800001u), 0x1p-127f, 0x1.008p0f};
  uint16_t raw[16], kernel[16];
  hw_float_to_bf16_16(x, raw);
  bf16->f32_to_bf16(x, kernel, 16);
  int flushed = 0;
  for (int i = 0; i < 16; ++i) {
    const uint16_t want = hg::float_to_bf16_bits(x[i]);
    const bool subnormal = (ref::bits_of(x[i]) & 0x7F800000u) == 0 && (ref::bits_of(x[i]) & 0x007FFFFFu) != 0;
    INFO("input ", i, ": float ", ref::hex(ref::bits_of(x[i]), 8), " instruction ", ref::hex(raw[i], 4),
         " kernel ", ref::hex(kernel[i], 4), " reference ", ref::hex(want, 4));
    CHECK(kernel[i] == want);
    if (subnormal) {
      CHECK((raw[i] & 0x7FFF) == 0);  // the instruction: ±0
      flushed += raw[i] != want;
    } else {
      CHECK(raw[i] == want);  // everywhere else it is IEEE rounding, NaN quieting included
    }
  }
  CHECK(flushed == 6);
}
