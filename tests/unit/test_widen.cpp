// framework/cpu/widen: the bulk F16/BF16 -> FP32 widenings that gemm_f16/gemm_bf16 pack with,
// against framework/dtype's scalar conversions, for every 16-bit pattern and every tail length.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "framework/cpu/widen.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Every pattern, widened in runs of length 1..17 (so every tail of the 8-wide path is used):
// the same bits as the scalar conversion, except that a NaN need only stay a NaN.
template <class Widen, class Scalar>
void check_all_patterns(Widen widen, Scalar scalar, const char* name) {
  std::vector<uint16_t> src(65536);
  for (uint32_t i = 0; i < 65536; ++i) src[i] = uint16_t(i);
  for (int64_t run = 1; run <= 17; ++run) {
    std::vector<float> out(65536 + 1, -7.f);
    for (int64_t i = 0; i < 65536; i += run) widen(src.data() + i, std::min<int64_t>(run, 65536 - i), out.data() + i);
    int64_t mismatches = 0;
    uint32_t first_bad = 0;
    for (uint32_t i = 0; i < 65536; ++i) {
      const float want = scalar(uint16_t(i)), got = out[i];
      const bool ok = std::isnan(want) ? std::isnan(got) : bits_of(got) == bits_of(want);
      if (!ok && mismatches++ == 0) first_bad = i;
    }
    INFO(std::string(name) << " run " << run << ": " << mismatches << " patterns differ, first 0x" << std::hex << first_bad);
    CHECK(mismatches == 0);
    CHECK(out[65536] == -7.f);  // nothing written past the end
  }
}

}  // namespace

TEST_CASE("widen_f16 matches half_bits_to_float on all 65536 patterns") {
  check_all_patterns(hg::cpu::widen_f16, hg::half_bits_to_float, "widen_f16");
}

TEST_CASE("widen_bf16 matches bf16_bits_to_float on all 65536 patterns") {
  check_all_patterns(hg::cpu::widen_bf16, hg::bf16_bits_to_float, "widen_bf16");
}
