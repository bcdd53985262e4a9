// A wrong answer: the half-spacing rule with the asymmetry at powers of two, but every tie
// counted as lost (ties do not always go to w: they go to the even mantissa).
// expect: a tie
#include <algorithm>
#include <cmath>

#include "lessons/06_fp16_naive/exercise.h"

bool update_is_lost(float w, float u) {
  const int p = w == 0.0f ? -14 : std::max(std::ilogb(w), -14);
  double spacing = std::ldexp(1.0, p - 10);
  const bool toward_zero = w != 0.0f && (w > 0.0f) == (u > 0.0f);
  if (toward_zero && std::fabs(w) == std::ldexp(1.0, p) && p > -14) spacing /= 2;
  return std::fabs(double(u)) <= spacing / 2;
}
