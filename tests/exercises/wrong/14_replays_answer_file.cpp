// A cheat: the scales of one grading, saved to a file (one float per call, in call order),
// replayed; the history is kept by hand. The sandbox stops the file from being opened; and a
// grading now asks other amaxes, in an order of its own, so the file would not fit anyway.
// expect: tried to open a file
#include <cstdio>

#include "lessons/14_fp8/exercise.h"

void student_delayed_update(DelayedState& s, float amax, int length, float, int) {
  static std::FILE* scales = std::fopen("scales_14.bin", "rb");
  s.history.insert(s.history.begin(), amax);
  if (int(s.history.size()) > length) s.history.pop_back();
  float scale = 0;
  if (scales && std::fread(&scale, sizeof scale, 1, scales) == 1) s.scale = scale;
}
