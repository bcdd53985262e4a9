// A cheat: the answers of the first group of inputs (zeros, signs and simple values), in the
// order a grading used to ask them, replayed one per call; after them, truncation. The
// inputs of a group now come in an order drawn at grading time, so the replay fails at once.
// expect: \[WRONG\] zeros, signs and simple values \(12 inputs\)
#include <cstdint>
#include <cstring>

namespace {
int calls = 0;  // a static local would need a guard variable; a namespace-scope int is plain data
}

uint16_t student_float_to_half(float x) {
  static const uint16_t answers[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x4000, 0x3800,
                                     0xc200, 0x3e00, 0x63d0, 0x3400, 0x7bff, 0xfbff};
  if (calls < 12) return answers[calls++];
  uint32_t f;
  std::memcpy(&f, &x, 4);
  const uint32_t sign = (f >> 16) & 0x8000;
  const int32_t e = int32_t((f >> 23) & 0xff) - 127 + 15;
  if (e <= 0 || e >= 31) return uint16_t(sign | (e >= 31 ? 0x7c00 : 0));
  return uint16_t(sign | uint32_t(e) << 10 | ((f >> 13) & 0x3ff));
}
