// A wrong answer: halfgrad's conversion does the work.
// expect: exercise\.cpp calls hg::float_to_half_bits
#include <cstdint>

#include "framework/dtype/half.h"

uint16_t student_float_to_half(float x) { return hg::float_to_half_bits(x); }
