// A wrong answer: the rule without its last case, so a tiny amax gives the scale inf.
// expect: largest float, FLT_MAX
#include "lessons/14_fp8/exercise.h"

#include <cmath>

void student_delayed_update(DelayedState& s, float amax, int length, float fp8_max, int margin) {
  s.history.insert(s.history.begin(), amax);
  if (int(s.history.size()) > length) s.history.pop_back();
  float m = 0;
  for (float a : s.history) {
    if (std::isnan(a)) {
      m = a;
      break;
    }
    if (a > m) m = a;
  }
  if (m > 0 && std::isfinite(m)) s.scale = fp8_max / m / std::ldexp(1.0f, margin);
}
