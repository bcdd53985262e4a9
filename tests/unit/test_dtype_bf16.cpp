// hg::bfloat16: float -> bf16 for every float32 bit pattern against an independent
// reference (truncate, take the next pattern up, compare the two distances in double),
// and all 65,536 bf16 patterns round-trip exactly through float.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>

#include "framework/dtype/bfloat16.h"
#include "tests/unit/test_dtype_reference.h"

namespace {
bool is_bf16_nan(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x007f) != 0; }
}  // namespace

TEST_CASE("dtype bf16: float -> bf16 for every float32 bit pattern equals the double-arithmetic reference") {
  ref::Mismatches bad;
  uint64_t nans = 0;
#pragma omp parallel for schedule(static) reduction(+ : nans)
  for (int64_t hi = 0; hi < 65536; ++hi) {  // 65536 × 65536 patterns
    for (uint32_t lo = 0; lo < 65536; ++lo) {
      const uint32_t u = uint32_t(hi) << 16 | lo;
      const float x = ref::float_of(u);
      const uint16_t got = hg::float_to_bf16_bits(x);
      bool ok;
      if (std::isnan(x)) {
        ++nans;
        // NaN stays NaN: sign kept, quiet bit set, top payload bits kept.
        ok = is_bf16_nan(got) && got == uint16_t((u >> 16) | 0x0040);
      } else {
        ok = got == uint16_t(ref::ref_round_keep_bits(x, 16) >> 16);
      }
      if (!ok) bad.add(u);
    }
  }
  if (bad.count) {
    float x = ref::float_of(uint32_t(bad.first.load()));
    std::printf("first mismatch: float %s (%.9g): got %s, reference %s; %llu mismatches\n",
                ref::hex(bad.first, 8).c_str(), double(x),
                ref::hex(hg::float_to_bf16_bits(x), 4).c_str(),
                ref::hex(ref::ref_round_keep_bits(x, 16) >> 16, 4).c_str(),
                (unsigned long long)bad.count.load());
  }
  CHECK(nans == 2 * ((uint64_t{1} << 23) - 1));
  CHECK(bad.count == 0);
}

TEST_CASE("dtype bf16: all 65536 patterns round-trip bf16 -> float -> bf16 and the value is the top half") {
  int bad = 0;
  uint32_t first = 0;
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = hg::bf16_bits_to_float(uint16_t(b));
    uint16_t back = hg::float_to_bf16_bits(f);
    bool ok = is_bf16_nan(uint16_t(b))
                  ? std::isnan(f) && back == uint16_t(b | 0x0040)  // NaN stays NaN (made quiet)
                  : back == b && ref::bits_of(f) == b << 16;       // exact, and just b << 16
    if (!ok && bad++ == 0) first = b;
  }
  INFO("first mismatch: bf16 ", ref::hex(first, 4));
  CHECK(bad == 0);
  CHECK(hg::bfloat16(1.0f).bits == 0x3f80);
  CHECK(float(hg::bfloat16::from_bits(0xc040)) == -3.0f);
}
