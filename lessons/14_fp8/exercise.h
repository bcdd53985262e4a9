#pragma once
// Chapter 14 exercise: delayed scaling — the amax history and the scale it gives.
//
// One FP8 tensor's state, as NVIDIA Transformer Engine keeps it:
//   history  the amaxes (largest |value|) of the last steps, newest first, at most `length`
//   scale    what the next cast multiplies the tensor by (code = round_fp8(x · scale));
//            it starts at 1
//
// student_delayed_update(s, amax, length, fp8_max, margin) runs after a step that cast the
// tensor, whose amax was `amax`: it keeps the history (at most `length` amaxes) and sets the
// scale the next cast uses. fp8_max is 448 (E4M3) or 57344 (E5M2); margin >= 0 is headroom
// in binades (a margin of 1 halves the scale). Which amaxes set the scale, and what an amax
// of 0, inf or NaN does to it, is yours to work out (README, "Delayed scaling").
// exercise.cpp is yours; `./lab check 14` grades it.
#include <vector>

struct DelayedState {
  std::vector<float> history;  // newest first
  float scale = 1.0f;
};

void student_delayed_update(DelayedState& s, float amax, int length, float fp8_max, int margin);
