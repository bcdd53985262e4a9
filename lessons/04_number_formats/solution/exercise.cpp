// Chapter 04 exercise, a reference solution (try it yourself first: ../exercise.cpp).
// Plain bit manipulation, the way one writes it by hand; it does not use halfgrad.
#include <cstdint>
#include <cstring>

// Round (value >> shift) to nearest, ties to even.
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
  uint32_t sign = (f >> 16) & 0x8000;
  int32_t exp = (f >> 23) & 0xff;
  uint32_t mant = f & 0x7fffff;

  // 1. inf and NaN. A NaN keeps its top payload bits and gets the quiet bit, so it stays NaN.
  if (exp == 255) return uint16_t(mant ? sign | 0x7c00 | 0x0200 | (mant >> 13) : sign | 0x7c00);

  // 2. Re-bias.
  int32_t e = exp - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00);  // too large even before rounding

  // 3. Normal: 10 mantissa bits kept, 13 rounded away. A carry out of the mantissa moves
  //    into the exponent by itself (and 0x7bff + 1 = 0x7c00 is inf: overflow by rounding).
  if (e >= 1) {
    uint32_t h = (uint32_t(e) << 10) | (mant >> 13);
    uint32_t dropped = mant & 0x1fff;
    if (dropped > 0x1000 || (dropped == 0x1000 && (h & 1))) h += 1;
    return uint16_t(sign | h);
  }

  // 4. Subnormal: count units of 2^-24. The significand (with its implicit 1) is worth
  //    significand × 2^(exp - 150), so shift by (-24) - (exp - 150) = 14 - e (e = exp - 112).
  if (e < -10) return uint16_t(sign);  // below 2^-25: rounds to zero
  uint32_t significand = mant | 0x800000;
  return uint16_t(sign | shift_round_even(significand, 14 - e));  // 0x400 = min normal: right
}
