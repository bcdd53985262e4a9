// Chapter 04 exercise: convert a float to FP16 yourself.
//
// Write student_float_to_half(x): the bits of the FP16 value nearest to x, exactly as the
// hardware rounds (to nearest, ties to even), with subnormals, ±0, ±inf, and NaN staying
// NaN. `./lab check 04` compares it with the hardware's answer on every one of the
// 4,294,967,296 floats, easy cases first, and explains the first mistake it finds.
//
//   FP32: 1 sign | 8 exponent (bias 127) | 23 mantissa
//   FP16: 1 sign | 5 exponent (bias 15)  | 10 mantissa
//
// Everything you need is in README.md: "## 1. Fields and bias" (what the fields mean and
// how rounding to nearest-even works), "## 2. Range and precision" (the ulp), "## 3.
// Subnormals" and "### Overflow" / "### Underflow" under "## 4. The experiments".
//
// The cases, in the order the checker tests them:
//   1. inf and NaN: a NaN must still be a NaN afterwards
//   2. the exponent: the same power of two, written with FP16's bias; too large -> inf
//   3. a normal FP16 result: FP16 keeps fewer mantissa bits than FP32; round away the rest
//      to the nearest FP16 value (ties to even). A rounding can overflow the mantissa.
//   4. a subnormal FP16 result (below 2^-14): the spacing stops shrinking; round to the
//      nearest multiple of the smallest subnormal, the same way
// Do not call halfgrad's conversion (hg::half, hg::float_to_half_bits, ...) or the CPU's
// F16C instructions: the checker refuses an exercise that does.
#include <cstdint>
#include <cstring>

uint16_t student_float_to_half(float x) {
  uint32_t f;
  std::memcpy(&f, &x, sizeof f);      // the 32 bits of x
  uint32_t sign = f >> 31;            // 1 bit
  int32_t exponent_field = (f >> 23) & 0xff;  // 8 bits, biased by 127
  uint32_t mantissa_field = f & 0x7fffff;     // 23 bits
  (void)exponent_field;               // (these two lines only silence "unused" warnings;
  (void)mantissa_field;               //  delete them when you use the fields)

  // TODO: your conversion. As shipped only the sign is right, in FP16's sign position.
  return uint16_t(sign << 15);
}
