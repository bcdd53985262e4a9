// A wrong answer: inf and NaN counts are ignored, so an overflowed histogram gets a scale.
// expect: cannot tell how large the gradients are
#include "lessons/08_loss_scaling/exercise.h"

#include <cmath>

float choose_loss_scale(const hg::amp::GradHistogram& h, int headroom) {

  int top = h.exp_min - 1;
  for (size_t i = 0; i < h.counts.size(); ++i)
    if (h.counts[i] > 0) top = h.exp_min + int(i);
  if (top < h.exp_min) return 0.0f;  // no finite non-zero gradient in the window
  const int recorded = std::ilogb(h.scale);  // log2 of the recording scale
  return std::ldexp(1.0f, recorded + 14 - top - headroom);
}

double fraction_underflowing(const hg::amp::GradHistogram& h, float S) {
  const int d = std::ilogb(S) - std::ilogb(h.scale);  // bins the histogram slides by
  int64_t total = h.below + h.above, under = h.below;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    total += h.counts[i];
    if (h.exp_min + int(i) + d + 1 <= -24) under += h.counts[i];
  }
  return total == 0 ? 0.0 : double(under) / double(total);
}
