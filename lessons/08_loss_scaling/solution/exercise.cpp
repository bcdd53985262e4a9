// Chapter 08 exercise — the reference solution.
#include "lessons/08_loss_scaling/exercise.h"

#include <cmath>

bool unscale_to_master(const hg::half* scaled_grad, float* master_grad, int64_t n, float loss_scale) {
  const float inv = 1.0f / loss_scale;
  bool found_inf = false;
  for (int64_t i = 0; i < n; ++i) {
    const float g = float(scaled_grad[i]);  // exact: every F16 value is an F32 value
    if (!std::isfinite(g)) found_inf = true;
    master_grad[i] = g * inv;
  }
  return found_inf;
}
