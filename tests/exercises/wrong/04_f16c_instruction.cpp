// A wrong answer: the CPU's F16C conversion instruction does the work.
// expect: uses the instruction vcvtps2ph
#include <immintrin.h>

#include <cstdint>

__attribute__((target("f16c"))) uint16_t student_float_to_half(float x) {
  return uint16_t(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}
