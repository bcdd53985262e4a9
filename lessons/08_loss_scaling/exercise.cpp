// Chapter 08 exercise — a static loss scale from a gradient histogram (see exercise.h).
//
// Multiplying the loss by S multiplies every gradient by S: on a histogram of binary
// exponents the whole shape slides right by log2 S bins ("## Run it": the median moves
// from −11 to −1 for S = 1024). Slide it as far right as F16's top allows, and see what is
// still left of F16's bottom. Things to get right:
//   - which values one bin holds (its lower edge and its upper edge),
//   - the largest value that does NOT become inf in F16 (chapter 04, "### Overflow"),
//   - the scale the histogram was recorded with,
//   - when the histogram cannot give an answer.
// std::ldexp(1.0f, k) is 2^k; std::log2 and std::ilogb read a power of two.
// Run: ./lab check 08
#include "lessons/08_loss_scaling/exercise.h"

#include <cmath>

float choose_loss_scale(const hg::amp::GradHistogram& h, int headroom) {
  // TODO: the largest safe power of two (or 0 when the histogram cannot tell).
  return 1.0f;
}

double fraction_underflowing(const hg::amp::GradHistogram& h, float S) {
  // TODO: the fraction of finite non-zero gradients with |S·g| < 2^-24.
  return 0.0;
}
