#pragma once
// TF32 — what an NVIDIA tensor core (Ampere and later) multiplies when it is given FP32
// inputs in "TF32 mode": 1 sign | 8 exponent (bias 127) | 10 mantissa, 19 bits used out of
// a 32-bit register. FP32's range with FP16's precision. There is no TF32 storage type:
// values stay floats whose low 13 mantissa bits are zero.
//
// Two roundings to TF32, differing only on exact ties (the 13 dropped bits are 1000...0):
//   round_to_tf32      halfgrad's TF32 *format*: nearest, ties to even, like every other
//                      conversion of framework/dtype (the format tables, the bit explorer).
//   round_to_tf32_rna  what the GPU does before a TF32 tensor-core multiply: PTX's
//                      cvt.rna.tf32.f32 (wmma::__float_to_tf32 in CUDA's mma.h is exactly
//                      this instruction) rounds to nearest with ties AWAY from zero. The
//                      tensor-core emulation (chapter 05, the GPU tests) uses this one.
// Example: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10. Ties-to-even gives 1 (even last
// bit), ties-away gives 1 + 2^-10.
#include "framework/dtype/float_format.h"
#include "framework/dtype/rounding.h"

namespace hg {

// x rounded to 10 mantissa bits, ties to even; FP32 range (near FLT_MAX it can round up
// to inf, like any IEEE rounding). NaN stays NaN.
inline float round_to_tf32(float x) {
  uint64_t t = convert_bits(float_bits(x), kFP32, kTF32);
  return float_from_bits(uint32_t(convert_bits(t, kTF32, kFP32)));
}

// x rounded to 10 mantissa bits, ties away from zero: the hardware's cvt.rna.tf32.f32.
// On the bits of |x| (sign-magnitude) it is "add half of the dropped quantum, then drop":
// adding 2^12 to the 32-bit pattern carries into bit 13 exactly when the dropped 13 bits are
// at least half (ties included, whatever the sign), and a carry out of the mantissa moves the
// exponent up, as rounding must (the largest finite floats round to inf; subnormals round
// into the normals). The compiled instruction does the same: an integer add of 0x1000
// (skipped for inf and NaN), then a mask 0xffffe000. inf stays inf; NaN is returned as it is
// (under the mask, a NaN whose payload sits only in the 13 dropped bits would read as inf; the
// NaNs a GPU computes, 0x7fffffff, keep payload bits above them).
inline float round_to_tf32_rna(float x) {
  const uint32_t bits = float_bits(x);
  if ((bits & 0x7f800000u) == 0x7f800000u) return x;  // inf or NaN: left alone
  return float_from_bits((bits + 0x1000u) & 0xffffe000u);
}

}  // namespace hg
