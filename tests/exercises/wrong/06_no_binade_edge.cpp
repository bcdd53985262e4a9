// A wrong answer: half the spacing of w's binade, ties to even — but a power of two stepped
// towards zero lands in the binade below, where the spacing is half as large.
// expect: half as far apart
#include <algorithm>
#include <cmath>

#include "lessons/06_fp16_naive/exercise.h"

bool update_is_lost(float w, float u) {
  const int p = w == 0.0f ? -14 : std::max(std::ilogb(w), -14);
  const double spacing = std::ldexp(1.0, p - 10), half = spacing / 2, step = std::fabs(double(u));
  if (step != half) return step < half;
  return std::fmod(std::fabs(w) / spacing, 2.0) == 0.0;
}
