// Chapter 09 exercise — write the scaler's update rule (see exercise.h for the rule).
//
// state.scale is S, state.growth_tracker counts finite steps in a row. Return the new state.
// The rule's fields: rule.growth_factor (2), rule.backoff_factor (0.5),
// rule.growth_interval (2000), rule.min_scale, rule.max_scale.
// Run: ./lab check 09
#include "lessons/09_dynamic_loss_scaling/exercise.h"

#include <algorithm>
#include <cmath>

hg::amp::ScaleState student_next_scale(const hg::amp::ScaleState& state, bool found_inf,
                                       const hg::amp::ScaleRule& rule) {
  hg::amp::ScaleState next = state;
  if (found_inf) {
    // TODO: back off
  } else {
    // TODO: count the finite step; grow after growth_interval of them
  }
  // TODO: clamp to [rule.min_scale, rule.max_scale]
  return next;
}
