// Chapter 08 exercise — the reference solution.
//
// A bin e holds scale·|g| in [2^e, 2^(e+1)). Backward on loss·S instead gives S·|g| in
// [2^(e+d), 2^(e+d+1)) with d = log2(S / scale): the histogram slides by d bins.
//
// Top: F16's largest finite value is 65504; from 65520 on, values round to inf. A bin whose
// upper edge 2^(e+d+1) is at most 2^15 stays below 65504 entirely; the next binade,
// [2^15, 2^16), already reaches past 65520. So the top bin e_max needs
//     e_max + d + 1 + headroom <= 15   ->   S = scale · 2^(14 − e_max − headroom).
// Bottom: a bin is below 2^-24 entirely when its upper edge is: e + d + 1 <= -24.
#include "lessons/08_loss_scaling/exercise.h"

#include <cmath>

float choose_loss_scale(const hg::amp::GradHistogram& h, int headroom) {
  if (h.inf > 0 || h.nan > 0 || h.above > 0) return 0.0f;  // the largest gradient is unknown
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
