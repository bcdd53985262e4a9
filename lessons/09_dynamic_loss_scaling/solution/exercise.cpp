// Chapter 09 exercise — the reference solution.
#include "lessons/09_dynamic_loss_scaling/exercise.h"

#include <algorithm>
#include <cmath>

hg::amp::ScaleState student_next_scale(const hg::amp::ScaleState& state, bool found_inf,
                                       const hg::amp::ScaleRule& rule) {
  hg::amp::ScaleState next = state;
  if (found_inf) {
    next.scale = state.scale * rule.backoff_factor;
    next.growth_tracker = 0;
  } else if (state.growth_tracker + 1 == rule.growth_interval) {
    const float grown = state.scale * rule.growth_factor;
    if (std::isfinite(grown)) next.scale = grown;
    next.growth_tracker = 0;
  } else {
    next.growth_tracker = state.growth_tracker + 1;
  }
  next.scale = std::min(std::max(next.scale, rule.min_scale), rule.max_scale);
  return next;
}
