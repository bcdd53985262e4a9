// Chapter 14 exercise — a solution: the delayed-scaling update.
#include "lessons/14_fp8/exercise.h"

#include <cmath>
#include <limits>

void student_delayed_update(DelayedState& s, float amax, int length, float fp8_max, int margin) {
  // 1. the newest amax in front; the history keeps `length` steps
  s.history.insert(s.history.begin(), amax);
  if (int(s.history.size()) > length) s.history.pop_back();
  // 2. the largest amax of the window: a step that was larger a few steps ago still counts,
  //    so the scale does not jump up the moment a spike passes. A NaN poisons the window.
  float m = 0;
  for (float a : s.history) {
    if (std::isnan(a)) {
      m = a;
      break;
    }
    if (a > m) m = a;
  }
  // 3. scale the window's amax onto fp8_max, minus `margin` binades of headroom; a window
  //    with nothing in it (0) or an overflow in it (inf, NaN) keeps the scale it had
  if (m > 0 && std::isfinite(m)) {
    s.scale = fp8_max / m / std::ldexp(1.0f, margin);
    // an amax of 1e-38 gives 448 / 1e-38 = inf: the largest float still casts the tensor
    if (std::isinf(s.scale)) s.scale = std::numeric_limits<float>::max();
  }
}
