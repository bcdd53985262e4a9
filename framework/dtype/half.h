#pragma once
// hg::half — IEEE 754 binary16 (FP16) as a software storage type.
//   1 sign | 5 exponent (bias 15) | 10 mantissa.  max 65504, min normal 2^-14,
//   min subnormal 2^-24, 3.3 decimal digits.
// Conversions round to nearest, ties to even, with subnormals, ±0, ±inf and NaN exactly as
// the hardware does (tests/unit/test_dtype_half.cpp compares all 2^32 floats with F16C).
// Arithmetic is not defined on half on purpose: a program converts to float, computes,
// and converts back, which is what GPU code does too (and what makes rounding visible).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "framework/dtype/float_format.h"
#include "framework/dtype/rounding.h"

namespace hg {

inline uint16_t float_to_half_bits(float x) {
  return uint16_t(convert_bits(float_bits(x), kFP32, kFP16));
}
inline float half_bits_to_float(uint16_t h) {
  return float_from_bits(uint32_t(convert_bits(h, kFP16, kFP32)));  // exact
}

struct half {
  uint16_t bits;

  half() = default;  // uninitialised, like float
  explicit half(float x) : bits(float_to_half_bits(x)) {}
  explicit operator float() const { return half_bits_to_float(bits); }
  static half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
};
static_assert(sizeof(half) == 2 && std::is_trivially_copyable_v<half>, "half must be 2 plain bytes");

// Whole arrays: these use the CPU's F16C instructions when it has them (8 values per
// instruction) and the software conversion above otherwise. Same bits either way.
void float_to_half_bits_n(const float* src, uint16_t* dst, size_t n);
void half_bits_to_float_n(const uint16_t* src, float* dst, size_t n);
bool cpu_has_f16c();  // what the array conversions use

}  // namespace hg
