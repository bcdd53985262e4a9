#pragma once
// TF32 — what an NVIDIA tensor core (Ampere and later) multiplies when it is given FP32
// inputs in "TF32 mode": 1 sign | 8 exponent (bias 127) | 10 mantissa, 19 bits used out of
// a 32-bit register. FP32's range with FP16's precision. There is no TF32 storage type:
// values stay floats whose low 13 mantissa bits are zero.
#include "framework/dtype/float_format.h"
#include "framework/dtype/rounding.h"

namespace hg {

// x rounded to 10 mantissa bits, ties to even; FP32 range (near FLT_MAX it can round up
// to inf, like any IEEE rounding). NaN stays NaN.
inline float round_to_tf32(float x) {
  uint64_t t = convert_bits(float_bits(x), kFP32, kTF32);
  return float_from_bits(uint32_t(convert_bits(t, kTF32, kFP32)));
}

}  // namespace hg
