// A wrong answer: inf/NaN is detected and skipped, but the gradients are never divided by S.
// expect: It got S·g: the gradients were not unscaled
#include "lessons/09_dynamic_loss_scaling/exercise.h"

#include <algorithm>
#include <cmath>

#include "framework/amp/unscale.h"

bool StudentScaler::step(hg::optim::Optimizer& opt, double max_norm) {
  // 1. Unscale every gradient (S·g -> g), noting any inf/NaN. Keep going after one: a
  //    skipped step must not leave half the gradients unscaled for someone to reuse.
  found_inf_ = false;
  for (const hg::Tensor& p : opt.params()) {
    hg::Tensor g = p.grad();
    if (!g.defined()) continue;
    float* d = g.data<float>();
    for (int64_t i = 0; i < g.numel(); ++i) {
      if (!std::isfinite(d[i])) found_inf_ = true;
    }
  }
  // 2. Overflowed: skip. Parameters and optimizer state stay bit for bit as they were.
  if (found_inf_) return false;
  // 3. Clip the TRUE gradients (after unscaling: before it, the norm would be S·‖g‖).
  if (max_norm > 0) hg::amp::clip_grad_norm_(opt.params(), max_norm);
  opt.step();
  return true;
}

void StudentScaler::update() {
  if (found_inf_) {
    scale_ *= rule_.backoff_factor;
    growth_tracker_ = 0;
  } else if (growth_tracker_ + 1 >= rule_.growth_interval) {
    const float grown = scale_ * rule_.growth_factor;
    if (std::isfinite(grown)) scale_ = grown;  // never grow into inf
    growth_tracker_ = 0;
  } else {
    ++growth_tracker_;
  }
  scale_ = std::min(std::max(scale_, rule_.min_scale), rule_.max_scale);
  found_inf_ = false;
}
