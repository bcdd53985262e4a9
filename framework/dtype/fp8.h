#pragma once
// FP8, the two OCP 8-bit formats (used for matrix multiplies on Hopper/Ada and later).
//   E4M3: 1 | 4 exponent (bias 7)  | 3 mantissa.  No inf; only S.1111.111 is NaN, so the top
//         binade holds finite values up to 448. Used for weights and activations.
//   E5M2: 1 | 5 exponent (bias 15) | 2 mantissa.  IEEE-like (inf, NaNs), max 57344:
//         FP16's range with 2 mantissa bits. Used for gradients.
// Conversions round to nearest, ties to even. Overflow (see Fp8Overflow):
//   Saturate (the default, like CUDA's __NV_SATFINITE): clamp to ±max, also for ±inf;
//   NonSaturating: ±inf for E5M2, NaN for E4M3 (0x7f, or 0xff for a negative value).
// A NaN becomes 0x7f in both formats, whatever its sign and payload: the byte NVIDIA's
// conversions write (cuda_fp8.hpp), so a cast here gives the GPU's bits for every input.
#include <cstdint>

#include "framework/dtype/float_format.h"
#include "framework/dtype/rounding.h"

namespace hg {

inline uint8_t float_to_e4m3(float x, Fp8Overflow overflow = Fp8Overflow::Saturate) {
  return uint8_t(convert_bits(float_bits(x), kFP32, kE4M3, overflow));
}
inline float e4m3_to_float(uint8_t b) {
  return float_from_bits(uint32_t(convert_bits(b, kE4M3, kFP32)));
}
inline uint8_t float_to_e5m2(float x, Fp8Overflow overflow = Fp8Overflow::Saturate) {
  return uint8_t(convert_bits(float_bits(x), kFP32, kE5M2, overflow));
}
inline float e5m2_to_float(uint8_t b) {
  return float_from_bits(uint32_t(convert_bits(b, kE5M2, kFP32)));
}

}  // namespace hg
