// A wrong answer: right for normal FP16 results, but everything below 2^-14 becomes zero
// (flush to zero, as if FP16 had no subnormals).
// expect: FP16 has subnormal numbers
#include <cstdint>
#include <cstring>

static uint32_t shift_round_even(uint32_t v, int s) {
  uint32_t kept = v >> s, dropped = v & ((1u << s) - 1), half = 1u << (s - 1);
  return dropped > half || (dropped == half && (kept & 1)) ? kept + 1 : kept;
}

uint16_t student_float_to_half(float x) {
  uint32_t f;
  std::memcpy(&f, &x, 4);
  const uint32_t sign = (f >> 16) & 0x8000, mant = f & 0x7fffff;
  const int32_t exp = (f >> 23) & 0xff;
  if (exp == 255) return uint16_t(mant ? sign | 0x7e00 | (mant >> 13) : sign | 0x7c00);
  const int32_t e = exp - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00);
  if (e >= 1) return uint16_t(sign | shift_round_even((uint32_t(e) << 23) | mant, 13));
  return uint16_t(sign);
}
