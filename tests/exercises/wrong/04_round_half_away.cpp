// A wrong answer: round to nearest, but ties away from zero (add half, then truncate).
// expect: was rounded up, away from zero
#include <cstdint>
#include <cstring>

static uint32_t shift_round_half_up(uint32_t v, int s) { return (v + (1u << (s - 1))) >> s; }

uint16_t student_float_to_half(float x) {
  uint32_t f;
  std::memcpy(&f, &x, 4);
  const uint32_t sign = (f >> 16) & 0x8000, mant = f & 0x7fffff;
  const int32_t exp = (f >> 23) & 0xff;
  if (exp == 255) return uint16_t(mant ? sign | 0x7e00 | (mant >> 13) : sign | 0x7c00);
  const int32_t e = exp - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00);
  if (e >= 1) return uint16_t(sign | shift_round_half_up((uint32_t(e) << 23) | mant, 13));
  if (e < -10) return uint16_t(sign);
  return uint16_t(sign | shift_round_half_up(mant | 0x800000, 14 - e));
}
