// Chapter 09 exercise — the scaler's step and update (see exercise.h).
//
// Three decisions make a loss scaler safe, and each is yours here:
//   - the optimizer must never see S·g, and never an inf: what happens to a step whose
//     gradients overflowed, and what must stay untouched then?
//   - clipping compares a norm with max_norm: which gradients, g or S·g, should that norm
//     be of? (README "## The loop")
//   - the rule: when does S shrink, when does it grow, what resets the counter?
//     (README "## Why a sawtooth")
// std::isfinite (<cmath>) is false for inf and NaN. hg::amp::clip_grad_norm_(opt.params(),
// max_norm) clips every .grad together (framework/amp/unscale.h).
// Run: ./lab check 09
#include "lessons/09_dynamic_loss_scaling/exercise.h"

#include <algorithm>
#include <cmath>

#include "framework/amp/unscale.h"

bool StudentScaler::step(hg::optim::Optimizer& opt, double max_norm) {
  // TODO: unscale, look for inf/NaN, clip, and step — or skip.
  return false;
}

void StudentScaler::update() {
  // TODO: the scale rule.
}
