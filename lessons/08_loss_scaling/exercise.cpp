// Chapter 08 exercise — write the unscale step.
//
// The F16 gradients came out of backward on loss·S, so each holds S·g. Fill the F32 master
// gradients with the true gradient and report overflow:
//
//   master_grad[i] = float(scaled_grad[i]) · (1 / loss_scale)
//   return true if any scaled_grad[i] is inf or NaN
//
// Hints: float(h) widens an hg::half exactly; std::isfinite(x) is false for inf and NaN.
// Multiply by 1/S rather than divide: it is what GPUs do, and for S a power of two both are
// exact. Keep going after an inf: the caller decides what to do (chapter 09 skips the step).
// Run: ./lab check 08
#include "lessons/08_loss_scaling/exercise.h"

#include <cmath>

bool unscale_to_master(const hg::half* scaled_grad, float* master_grad, int64_t n, float loss_scale) {
  bool found_inf = false;
  for (int64_t i = 0; i < n; ++i) {
    // TODO: the true gradient, in F32
    master_grad[i] = 0.0f;
    // TODO: note whether scaled_grad[i] overflowed (inf) or is NaN
  }
  return found_inf;
}
