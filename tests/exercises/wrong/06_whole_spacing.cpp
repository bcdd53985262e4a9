// A wrong answer: an update is taken as lost while it is smaller than the whole spacing,
// not half of it.
// expect: less than half of that
#include <algorithm>
#include <cmath>

#include "lessons/06_fp16_naive/exercise.h"

bool update_is_lost(float w, float u) {
  const int p = w == 0.0f ? -14 : std::max(std::ilogb(w), -14);
  return std::fabs(double(u)) < std::ldexp(1.0, p - 10);
}
