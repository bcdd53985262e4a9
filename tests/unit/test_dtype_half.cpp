// hg::half (FP16): exhaustive checks.
//   - all 65,536 half patterns round-trip half -> float -> half (NaN stays NaN)
//   - float -> half for all 2^32 float patterns equals the CPU's F16C conversion
//     (skipped with exit code 77 on a CPU without F16C)
//   - half -> float for all 65,536 patterns equals F16C, and the array functions (the F16C
//     fast path) give the same bits as the software path
//   - float -> half on a strided sweep equals the table reference (runs on every CPU)
#include <doctest/doctest.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HG_TEST_X86 1
#else
#define HG_TEST_X86 0
#endif

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "framework/dtype/half.h"
#include "tests/unit/test_dtype_reference.h"

namespace {

#if HG_TEST_X86
bool cpu_f16c() { return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c"); }
#else
bool cpu_f16c() { return false; }  // not an x86 CPU: no F16C to compare with
#endif

void require_f16c_or_skip() {
  if (!cpu_f16c()) {
    std::printf("SKIP: this CPU has no F16C instructions (x86 AVX + F16C), so there is no hardware reference "
                "to compare with (the strided table-reference test still runs)\n");
    std::fflush(stdout);
    std::exit(77);
  }
}

// The hardware references, compiled for F16C here (not through the library).
#if HG_TEST_X86
__attribute__((target("avx,f16c"))) void hw_float_to_half8(const float* src, uint16_t* dst) {
  __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src), _MM_FROUND_TO_NEAREST_INT);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), h);
}
__attribute__((target("avx,f16c"))) float hw_half_to_float(uint16_t h) { return _cvtsh_ss(h); }
#else
void hw_float_to_half8(const float*, uint16_t*) {}  // never called: cpu_f16c() is false
float hw_half_to_float(uint16_t) { return 0; }
#endif

bool is_half_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x03ff) != 0; }

}  // namespace

TEST_CASE("dtype half: all 65536 patterns round-trip half -> float -> half") {
  int mismatches = 0, nans = 0;
  uint32_t first_bad = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = hg::half_bits_to_float(uint16_t(h));
    uint16_t back = hg::float_to_half_bits(f);
    bool ok;
    if (is_half_nan(uint16_t(h))) {
      ++nans;
      // NaN stays NaN, with its sign; a signalling NaN comes back quiet (bit 9 set).
      ok = std::isnan(f) && is_half_nan(back) && (back & 0x8000) == (h & 0x8000) &&
           back == (h | 0x0200);
    } else {
      ok = back == h;
    }
    if (!ok && mismatches++ == 0) first_bad = h;
  }
  INFO("first mismatch: half ", ref::hex(first_bad, 4), " -> float -> ",
       ref::hex(hg::float_to_half_bits(hg::half_bits_to_float(uint16_t(first_bad))), 4));
  CHECK(nans == 2 * 1023);  // per sign: exponent 11111 with 1023 non-zero mantissas
  CHECK(mismatches == 0);
  // The struct gives the same as the functions.
  CHECK(hg::half(1.0f).bits == 0x3c00);
  CHECK(float(hg::half::from_bits(0xc000)) == -2.0f);
}

TEST_CASE("dtype half: half -> float for all 65536 patterns equals F16C, and so does the array path") {
  require_f16c_or_skip();
  std::vector<uint16_t> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = uint16_t(h);
  std::vector<float> fast(65536);
  hg::half_bits_to_float_n(all.data(), fast.data(), all.size());
  int bad_soft = 0, bad_fast = 0;
  uint32_t first = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    uint32_t hw = ref::bits_of(hw_half_to_float(uint16_t(h)));
    uint32_t sw = ref::bits_of(hg::half_bits_to_float(uint16_t(h)));
    if (sw != hw && bad_soft++ == 0) first = h;
    if (ref::bits_of(fast[h]) != hw) ++bad_fast;
  }
  INFO("first mismatch: half ", ref::hex(first, 4), " software ",
       ref::hex(ref::bits_of(hg::half_bits_to_float(uint16_t(first))), 8), " F16C ",
       ref::hex(ref::bits_of(hw_half_to_float(uint16_t(first))), 8));
  CHECK(bad_soft == 0);
  CHECK(bad_fast == 0);
}

TEST_CASE("dtype half: float -> half for every float32 bit pattern equals F16C (round to nearest even)") {
  require_f16c_or_skip();
  // 2^32 inputs in blocks of 4096: the software conversion and the library's array path
  // (F16C) against the F16C instruction called directly here.
  constexpr uint64_t kBlock = 4096;
  ref::Mismatches soft_bad, fast_bad;
#pragma omp parallel
  {
    std::vector<float> in(kBlock);
    std::vector<uint16_t> hw(kBlock), fast(kBlock);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < int64_t((uint64_t{1} << 32) / kBlock); ++b) {
      const uint64_t base = uint64_t(b) * kBlock;
      for (uint64_t i = 0; i < kBlock; ++i) in[i] = ref::float_of(uint32_t(base + i));
      for (uint64_t i = 0; i < kBlock; i += 8) hw_float_to_half8(&in[i], &hw[i]);
      hg::float_to_half_bits_n(in.data(), fast.data(), kBlock);
      for (uint64_t i = 0; i < kBlock; ++i) {
        if (hg::float_to_half_bits(in[i]) != hw[i]) soft_bad.add(base + i);
        if (fast[i] != hw[i]) fast_bad.add(base + i);
      }
    }
  }
  if (soft_bad.count) {
    float x = ref::float_of(uint32_t(soft_bad.first.load()));
    uint16_t hw;
    float in8[8] = {x, 0, 0, 0, 0, 0, 0, 0};
    uint16_t out8[8];
    hw_float_to_half8(in8, out8);
    hw = out8[0];
    std::printf("first mismatch: float %s (%.9g): software %s, F16C %s; %llu mismatches\n",
                ref::hex(soft_bad.first, 8).c_str(), double(x),
                ref::hex(hg::float_to_half_bits(x), 4).c_str(), ref::hex(hw, 4).c_str(),
                (unsigned long long)soft_bad.count.load());
  }
  CHECK(soft_bad.count == 0);
  CHECK(fast_bad.count == 0);
}

TEST_CASE("dtype half: float -> half on a strided sweep equals the table reference (no F16C needed)") {
  const std::vector<double> vals = ref::ref_values(ref::kFP16);
  REQUIRE(vals.size() == 0x7c00);  // codes 0x0000 .. 0x7bff
  ref::Mismatches bad;
  // Every 257th pattern (all exponents, many mantissas), plus every float within 2 ulps of
  // each half value and of each midpoint between neighbours: all the ties and boundaries.
  std::vector<float> inputs;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 257) inputs.push_back(ref::float_of(uint32_t(u)));
  for (size_t i = 0; i + 1 < vals.size(); ++i) {
    for (double c : {vals[i], (vals[i] + vals[i + 1]) / 2}) {
      float x = float(c);  // exact: halves and their midpoints fit in a float
      float lo = x, hi = x;
      for (int k = 0; k < 2; ++k) {
        lo = std::nextafter(lo, -1.0f);
        hi = std::nextafter(hi, 1e30f);
      }
      for (float v : {lo, std::nextafter(x, -1.0f), x, std::nextafter(x, 1e30f), hi}) {
        inputs.push_back(v);
        inputs.push_back(-v);
      }
    }
  }
  for (float v : {65504.0f, 65519.0f, 65520.0f, 65536.0f, INFINITY, -INFINITY, NAN})
    inputs.push_back(v);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(inputs.size()); ++i) {
    ref::RefResult r = ref::ref_round(double(inputs[size_t(i)]), ref::kFP16, vals, false);
    uint16_t got = hg::float_to_half_bits(inputs[size_t(i)]);
    bool ok = r.nan ? is_half_nan(got) : got == r.code;
    if (!ok) bad.add(uint64_t(i));
  }
  if (bad.count) {
    float x = inputs[bad.first];
    ref::RefResult r = ref::ref_round(double(x), ref::kFP16, vals, false);
    std::printf("first mismatch: float %s (%.9g): got %s, reference %s\n",
                ref::hex(ref::bits_of(x), 8).c_str(), double(x),
                ref::hex(hg::float_to_half_bits(x), 4).c_str(),
                r.nan ? "NaN" : ref::hex(r.code, 4).c_str());
  }
  MESSAGE(inputs.size(), " inputs checked");
  CHECK(bad.count == 0);
}
