// Chapter 04 exercise: convert a float to FP16 yourself.
//
// Write student_float_to_half(x): the FP16 bit pattern nearest to x, exactly as the
// hardware does it (round to nearest, ties to even; subnormals; ±0; ±inf; NaN stays NaN).
// Then run
//     ./lab check 04
// which compares your function with halfgrad's on every one of the 4,294,967,296 floats
// and tells you the first input that goes wrong, with a hint.
//
//   FP32: 1 sign | 8 exponent (bias 127) | 23 mantissa      value = 1.mantissa × 2^(exp - 127)
//   FP16: 1 sign | 5 exponent (bias 15)  | 10 mantissa      value = 1.mantissa × 2^(exp - 15)
//         FP16 exponent field 0: subnormal, value = 0.mantissa × 2^-14  (= mantissa × 2^-24)
//         FP16 exponent field 31: inf (mantissa 0) or NaN (mantissa != 0)
//
// Work through the TODOs in order; the checker tests the easy cases first.
#include <cstdint>
#include <cstring>

uint16_t student_float_to_half(float x) {
  uint32_t f;
  std::memcpy(&f, &x, sizeof f);       // the 32 bits of x
  uint32_t sign = (f >> 16) & 0x8000;  // bit 31 of the float becomes bit 15 of the half
  int32_t exp = (f >> 23) & 0xff;      // FP32 exponent field (biased by 127)
  uint32_t mant = f & 0x7fffff;        // FP32 mantissa field, 23 bits
  (void)exp;                           // (these two lines only silence "unused" warnings;
  (void)mant;                          //  delete them once you use exp and mant)

  // TODO 1 — inf and NaN: an FP32 exponent field of 255.
  //   inf (mant == 0) -> sign | 0x7c00.
  //   NaN (mant != 0) -> must stay a NaN: sign | 0x7c00 | a non-zero mantissa. Keep the top
  //   10 bits of mant and set the "quiet" bit 0x0200 so the mantissa can never become 0.

  // TODO 2 — re-bias the exponent: the same power of two 2^(exp - 127) has the FP16 field
  //   e = exp - 127 + 15.  If e >= 31 the value is too large for FP16 even before rounding:
  //   return sign | 0x7c00 (inf).

  // TODO 3 — normal FP16 (1 <= e <= 30): keep the top 10 mantissa bits, h = (e << 10) | (mant >> 13),
  //   then ROUND using the 13 dropped bits (mant & 0x1fff):
  //     more than half (> 0x1000)          -> round up: h + 1
  //     exactly half (== 0x1000), a tie    -> round to EVEN: up only if h is odd
  //     less than half                      -> keep h
  //   Rounding up can carry from the mantissa into the exponent (1.1111111111 + 1 ulp = 10.0);
  //   adding 1 to the whole of h does that for you, and even turns 65520 into inf (0x7c00).

  // TODO 4 — subnormal FP16 (e <= 0): the result is a multiple of 2^-24.
  //   Put the implicit leading 1 back (mant | 0x800000: the significand, 24 bits, worth
  //   significand × 2^(exp - 150)), shift it right by 14 - e so it counts units of 2^-24,
  //   and round the shifted-out bits to nearest, ties to even, exactly as in TODO 3.
  //   Far below (e < -10: less than half of 2^-24) the answer is just the signed zero.
  //   A subnormal that rounds up to 0x400 is the smallest normal: those bits are right as is.

  return uint16_t(sign);  // placeholder: only the sign is right so far
}
