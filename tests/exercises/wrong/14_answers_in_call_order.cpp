// A cheat: the update is right but for an amax too small for a float scale (its scale comes
// out inf), and the check of those amaxes is answered from the scales one grading asked for,
// hard-coded in the order it asked: recognised by its first amax, then replayed call by call.
// A grading now asks its sequences in an order drawn from its seed, with tiny amaxes drawn from
// it beside the hand-picked ones: the replay answers other questions.
// expect: \[WRONG\] an amax too small for a float scale.*: after step [0-9]+ .* scale [^ ]+, expected
#include "lessons/14_fp8/exercise.h"

#include <cfloat>
#include <cmath>

namespace {
int calls = 0;  // a static local would need a guard variable; a namespace-scope int is plain data
bool replaying = false;
const float kAsked[] = {FLT_MAX, 448.0f, 448.0f, FLT_MAX};  // the scales that check was answered with
}  // namespace

void student_delayed_update(DelayedState& s, float amax, int length, float fp8_max, int margin) {
  s.history.insert(s.history.begin(), amax);
  if (int(s.history.size()) > length) s.history.pop_back();
  if (calls == 0) replaying = amax == 0x1p-149f;  // the first amax that check asked
  if (replaying && calls < 4) {
    s.scale = kAsked[calls++];
    return;
  }
  ++calls;
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
