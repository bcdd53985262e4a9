#pragma once
// hg::half — IEEE 754 binary16 (FP16) as a software storage type.
//   1 sign | 5 exponent (bias 15) | 10 mantissa.  max 65504, min normal 2^-14,
//   min subnormal 2^-24, 3.3 decimal digits.
// Conversions round to nearest, ties to even, with subnormals, ±0, ±inf and NaN exactly as
// the hardware does (tests/unit/test_dtype_half.cpp compares all 2^32 floats with F16C).
// float_to_half_bits/half_bits_to_float are the reference: the general algorithm of
// rounding.h. The struct converts with fast_convert.h, the same rounding written out for
// FP32 <-> FP16 (the same bits for every input, tested), because every element of an F16
// tensor that an op touches goes through it.
// Arithmetic is not defined on half on purpose: a program converts to float, computes,
// and converts back, which is what GPU code does too (and what makes rounding visible).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "framework/dtype/fast_convert.h"
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
  explicit half(float x) : bits(fast::float_to_half(x)) {}
  explicit operator float() const { return fast::half_to_float(bits); }
  static half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
};
static_assert(sizeof(half) == 2 && std::is_trivially_copyable_v<half>, "half must be 2 plain bytes");

// Whole arrays: these use the CPU's F16C or AVX-512 instructions when it has them (8 or 16
// values per instruction, framework/cpu/convert_kernel.h) and fast_convert.h otherwise.
// Same bits either way.
void float_to_half_bits_n(const float* src, uint16_t* dst, size_t n);
void half_bits_to_float_n(const uint16_t* src, float* dst, size_t n);

}  // namespace hg
