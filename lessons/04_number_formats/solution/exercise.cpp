// Chapter 04 exercise, a reference solution (try it yourself first: ../exercise.cpp).
// Plain bit manipulation, the way one writes it by hand; it does not use halfgrad.
#include <cstdint>
#include <cstring>

// value >> shift, rounded to nearest, ties to even (shift >= 1).
static uint32_t shift_round_even(uint32_t value, int shift) {
  uint32_t kept = value >> shift;
  uint32_t dropped = value & ((1u << shift) - 1);
  uint32_t half = 1u << (shift - 1);
  if (dropped > half || (dropped == half && (kept & 1))) kept += 1;
  return kept;
}

uint16_t student_float_to_half(float x) {
  uint32_t f;
  std::memcpy(&f, &x, sizeof f);
  uint32_t sign = (f >> 31) << 15;
  int32_t exponent_field = (f >> 23) & 0xff;
  uint32_t mantissa_field = f & 0x7fffff;

  // 1. inf and NaN. A NaN keeps its top payload bits and gets the quiet bit (the top
  //    mantissa bit), so its mantissa can never become 0 — which would make it inf.
  if (exponent_field == 255)
    return uint16_t(mantissa_field ? sign | 0x7c00 | 0x0200 | (mantissa_field >> 13) : sign | 0x7c00);

  // 2. The same power of two, with FP16's bias.
  int32_t e = exponent_field - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00);  // too large even before rounding

  // 3. Normal: 10 mantissa bits kept, 13 rounded away. Rounding the exponent and mantissa
  //    together as one number lets a carry out of the mantissa move into the exponent by
  //    itself (1.1111111111 + 1 ulp = 10.0000000000), and 0x7bff + 1 = 0x7c00 is inf.
  if (e >= 1) return uint16_t(sign | shift_round_even((uint32_t(e) << 23) | mantissa_field, 13));

  // 4. Subnormal: count units of 2^-24. The significand (implicit 1 put back) is worth
  //    significand × 2^(exponent_field - 150); in units of 2^-24 that is a right shift by
  //    (-24) - (exponent_field - 150) = 14 - e.
  if (e < -10) return uint16_t(sign);  // below 2^-25: rounds to zero
  uint32_t significand = mantissa_field | 0x800000;
  return uint16_t(sign | shift_round_even(significand, 14 - e));  // 0x400 = min normal: right
}
