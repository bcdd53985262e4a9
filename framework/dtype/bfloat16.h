#pragma once
// hg::bfloat16 — "brain float": the top 16 bits of an FP32.
//   1 sign | 8 exponent (bias 127) | 7 mantissa.  FP32's range (max ≈ 3.39e38) with
//   2.4 decimal digits. Conversion from float rounds to nearest, ties to even (not the
//   truncation some code uses), with subnormals, ±0, ±inf and NaN.
// float_to_bf16_bits/bf16_bits_to_float are the reference (the general algorithm of
// rounding.h); the struct converts with fast_convert.h, the same bits in a few operations.
#include <cstdint>
#include <type_traits>

#include "framework/dtype/fast_convert.h"
#include "framework/dtype/float_format.h"
#include "framework/dtype/rounding.h"

namespace hg {

inline uint16_t float_to_bf16_bits(float x) {
  return uint16_t(convert_bits(float_bits(x), kFP32, kBF16));
}
inline float bf16_bits_to_float(uint16_t b) {
  return float_from_bits(uint32_t(convert_bits(b, kBF16, kFP32)));  // exact: b << 16 (NaN: quieted)
}

struct bfloat16 {
  uint16_t bits;

  bfloat16() = default;  // uninitialised, like float
  explicit bfloat16(float x) : bits(fast::float_to_bf16(x)) {}
  explicit operator float() const { return fast::bf16_to_float(bits); }
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 v;
    v.bits = b;
    return v;
  }
};
static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable_v<bfloat16>,
              "bfloat16 must be 2 plain bytes");

}  // namespace hg
