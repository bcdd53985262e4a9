#pragma once
// encode / decode / decompose: any value in any FloatFormat, taken apart.
// Included by float_format.h; this is what chapter 04 prints and the viewer's bit explorer
// draws. Every value of every format here is exactly a double, so `double` carries them.
#include <cstdint>
#include <string>

#include "framework/dtype/float_format.h"  // (it includes this file at its end: either order works)

namespace hg {

enum class FloatClass { Zero, Subnormal, Normal, Inf, NaN };
const char* to_string(FloatClass);  // "zero" "subnormal" "normal" "inf" "NaN"

// The nearest value of the format (ties to even), as bits in the format's layout
// (sign in bit total_bits()-1). Overflow: NonSaturating gives ±inf, or NaN for E4M3, which
// has no inf; Saturate clamps to ±max_finite.
uint64_t encode(double value, const FloatFormat&,
                Fp8Overflow overflow = Fp8Overflow::NonSaturating);
double decode(uint64_t bits, const FloatFormat&);  // exact

FloatClass classify_bits(uint64_t bits, const FloatFormat&);

struct Decomposed {
  const FloatFormat* format;
  double input;                  // what was asked for (NaN for decompose_bits: no input)
  uint64_t bits;                 // the stored pattern
  int sign;                      // 0 or 1
  uint32_t exponent_field;       // as stored (biased)
  uint64_t mantissa_field;       // as stored (without the implicit leading 1)
  int unbiased_exponent;         // field - bias; for zero and subnormals 1 - bias (their scale)
  FloatClass cls;
  double value;                  // the value stored (exact)
  std::string exact_decimal;     // that value written out exactly in decimal
  double abs_error, rel_error;   // |value - input|, abs_error / |input| (0 when both are 0)
  double error_ulps;             // abs_error / ulp: at most 0.5 for a correctly rounded finite value
  double ulp;                    // gap to the next value away from zero at this exponent
                                 // (for 0 and subnormals: min_subnormal); NaN for inf/NaN
  double next_up, next_down;     // neighbours; past the largest finite: inf (NaN in E4M3)
};
Decomposed decompose(double value, const FloatFormat&);
Decomposed decompose_bits(uint64_t bits, const FloatFormat&);

// The exact decimal expansion of a double: 0.1 -> "0.1000000000000000055511151231257827..."
// (every binary fraction has a finite decimal one). "inf", "-inf", "nan", "-0" for specials.
std::string exact_decimal(double x);
// The bits as text with the fields apart: FP16 1.0 -> "0 01111 0000000000".
std::string bits_string(uint64_t bits, const FloatFormat&);

}  // namespace hg
