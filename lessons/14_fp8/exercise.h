#pragma once
// Chapter 14 exercise: delayed scaling — the amax history and the scale it gives.
//
// One FP8 tensor's state, as NVIDIA Transformer Engine keeps it:
//   history  the amaxes (largest |value|) of the last steps, newest first, at most `length`
//   scale    what the next cast multiplies the tensor by (code = round_fp8(x · scale));
//            it starts at 1
//
// student_delayed_update(s, amax, length, fp8_max, margin) runs after a step that cast the
// tensor, whose amax was `amax`:
//   1. amax enters the history at the front; when the history then holds more than `length`
//      entries, the oldest one leaves;
//   2. m = the largest amax in the history (a NaN anywhere in it makes m NaN);
//   3. when m > 0 and m is finite: scale = fp8_max / m / 2^margin, computed in float in that
//      order, and FLT_MAX (std::numeric_limits<float>::max()) if that came out inf (an m so
//      small that the quotient passes float's range); otherwise the scale stays what it was.
// fp8_max is 448 (E4M3) or 57344 (E5M2); margin >= 0 is the headroom in binades.
//
// exercise.cpp is yours; `./lab check 14` grades it.
#include <vector>

struct DelayedState {
  std::vector<float> history;  // newest first
  float scale = 1.0f;
};

void student_delayed_update(DelayedState& s, float amax, int length, float fp8_max, int margin);
