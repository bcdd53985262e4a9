// A wrong answer: the history's max skips a NaN (std::fmax returns the other argument, as
// `a > m ? a : m` does), so a step after a NaN sets the scale from the finite amaxes instead
// of keeping it until the NaN leaves the history.
// expect: skips the NaN
#include "lessons/14_fp8/exercise.h"

#include <cmath>
#include <limits>

void student_delayed_update(DelayedState& s, float amax, int length, float fp8_max, int margin) {
  s.history.insert(s.history.begin(), amax);
  if (int(s.history.size()) > length) s.history.pop_back();
  float m = 0;
  for (float a : s.history) m = std::fmax(m, a);
  if (m > 0 && std::isfinite(m)) {
    s.scale = fp8_max / m / std::ldexp(1.0f, margin);
    if (std::isinf(s.scale)) s.scale = std::numeric_limits<float>::max();
  }
}
