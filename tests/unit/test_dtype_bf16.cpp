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
  // Outer loop: the top 16 bits, i.e. the pattern truncated toward zero. Its value and the
  // value of the next pattern up are the two candidates for all 65536 inputs below; the
  // reference picks the nearer one by comparing distances in double (exact here), ties to
  // the even pattern. The same rule as ref::ref_round_keep_bits, with the candidates hoisted.
#pragma omp parallel for schedule(static) reduction(+ : nans)
  for (int64_t hi = 0; hi < 65536; ++hi) {
    const uint32_t down = uint32_t(hi) << 16;
    const uint32_t mag_down = down & 0x7fffffffu;
    const bool special = (mag_down & 0x7f800000u) == 0x7f800000u;  // inf or NaN inputs
    const double lo_val = std::fabs(double(ref::float_of(down)));
    // The pattern above 0x7f7f.... is inf: it stands for 2^128 (IEEE rounds as if the
    // exponent were unbounded, then overflows).
    const uint32_t mag_up = mag_down + 0x10000u;
    const double up_val = mag_up >= 0x7f800000u ? std::ldexp(1.0, 128) : double(ref::float_of(mag_up));
    const uint16_t r_down = uint16_t(hi), r_up = uint16_t((down >> 16) + 1);
    const bool down_is_even = (hi & 1) == 0;
    for (uint32_t lo = 0; lo < 65536; ++lo) {
      const uint32_t u = down | lo;
      const float x = ref::float_of(u);
      const uint16_t got = hg::float_to_bf16_bits(x);
      uint16_t want;
      if (special) {
        if (lo == 0 && (mag_down == 0x7f800000u)) {
          want = r_down;  // ±inf
        } else {
          ++nans;  // NaN stays NaN: sign kept, quiet bit set, top payload bits kept
          want = uint16_t(r_down | 0x0040);
        }
      } else {
        const double a = std::fabs(double(x));
        const double below = a - lo_val, above = up_val - a;
        const bool pick_up = above < below || (above == below && !down_is_even);
        want = pick_up ? r_up : r_down;
      }
      if (got != want) bad.add(u);
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
