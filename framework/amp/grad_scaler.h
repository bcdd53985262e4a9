#pragma once
// GradScaler: dynamic loss scaling with PyTorch's semantics (torch.cuda.amp.GradScaler).
//
// Why: FP16 rounds gradients of at most 2^-25 to zero (half its smallest subnormal). Multiplying the loss by S multiplies every
// gradient by S (backward is linear in its seed), which lifts them into FP16's range; the
// gradients are divided by S again before the optimizer uses them.
//
//   hg::amp::GradScaler scaler;                 // S = 2^16
//   opt.zero_grad();
//   scaler.scale(loss).backward();              // gradients are S·g
//   scaler.unscale_(opt);                       // optional: only if you clip
//   hg::amp::clip_grad_norm_(opt.params(), 1.0);
//   bool stepped = scaler.step(opt);            // unscales if not done; skips on inf/NaN
//   scaler.update();                            // the rule of scale_rule.h
//
// F16 gradients are refused, as PyTorch refuses them ("Attempting to unscale FP16
// gradients."): divided by S in F16, the small values the scale lifted into F16's range fall
// back out of it. The scaler works on F32 gradients: the F32 master copies of an F16 model
// (chapter 07, master_weights.h) or F32 parameters under autocast (chapter 10). BF16
// gradients are allowed (BF16 has F32's range).
//
// Per step (between two update() calls):
//   - unscale_(opt) at most once per optimizer: a second call throws (the gradients would
//     be divided by S twice).
//   - step(opt) at most once per optimizer; it calls unscale_ when you did not.
//   - when any gradient held inf or NaN, step() does NOT call opt.step(): parameters and
//     optimizer state stay bit-for-bit as they were. It returns false.
//   - update() applies the scale rule once, with found_inf = any optimizer found one.
// Gradient accumulation: call backward() on several scaled micro-batch losses, then step()
// and update() once: one check and one scale change per effective batch.
#include <cstdint>
#include <map>

#include <nlohmann/json.hpp>

#include "framework/amp/scale_rule.h"
#include "framework/optim/optimizer.h"
#include "framework/tensor/tensor.h"

namespace hg::amp {

class GradScaler {
 public:
  // enabled = false turns every call into a pass-through (scale(loss) is loss, step()
  // just steps), so one training loop serves FP32 and AMP.
  explicit GradScaler(ScaleRule rule = {}, bool enabled = true);

  // loss · S, recorded by autograd (so backward starts from S instead of 1).
  Tensor scale(const Tensor& loss) const;

  // Multiplies the gradients of opt's parameters by 1/S in place and records whether any
  // unscaled value is inf or NaN. Throws std::logic_error when called twice before
  // update(), and std::invalid_argument (touching nothing) when a gradient is F16.
  void unscale_(optim::Optimizer& opt);

  // Unscales (if unscale_ was not called), then steps the optimizer unless a gradient was
  // inf/NaN. Returns whether the optimizer stepped. Throws when called twice before update().
  bool step(optim::Optimizer& opt);

  // Applies the scale rule for this step and resets the per-step records.
  // Throws std::logic_error when nothing was unscaled since the last update().
  void update();

  float get_scale() const { return state_.scale; }
  int64_t growth_tracker() const { return state_.growth_tracker; }
  bool is_enabled() const { return enabled_; }
  const ScaleRule& rule() const { return rule_; }
  // Whether the last update() saw an inf/NaN (its step was skipped).
  bool last_found_inf() const { return last_found_inf_; }
  // How many times gradients were checked for inf/NaN (one per optimizer per step).
  int64_t checks() const { return checks_; }

  // For checkpoints: scale, growth tracker and the rule's fields (factors, interval,
  // min_scale, max_scale; an unbounded max_scale is written "inf"), as JSON.
  nlohmann::json state_dict() const;
  // Restores a state_dict(); the saved scale also becomes the rule's init_scale (as in
  // PyTorch). Throws std::invalid_argument naming a missing or bad field, and then changes
  // nothing. State dicts written before the bounds were enforced still load: a missing
  // min_scale or max_scale takes the default, and the old "no minimum", min_scale 0 (no
  // longer legal), takes the default minimum; max_scale "inf" stays "no maximum".
  void load_state_dict(const nlohmann::json& state);

 private:
  struct PerOptimizer {
    bool unscaled = false;
    bool stepped = false;
    bool found_inf = false;
  };
  ScaleRule rule_;
  ScaleState state_;
  bool enabled_;
  bool last_found_inf_ = false;
  int64_t checks_ = 0;
  std::map<const optim::Optimizer*, PerOptimizer> per_opt_;  // this step's records
};

// A fixed loss scale S (chapter 08): no growth, no backoff, no skipping. Too large an S
// lets gradients overflow to inf, the optimizer then writes inf/NaN into the weights, and
// the run dies: the reason the dynamic scaler exists.
class StaticScaler {
 public:
  explicit StaticScaler(float scale);
  Tensor scale(const Tensor& loss) const;  // loss · S
  // g <- g / S for every parameter of opt; returns whether any gradient was inf/NaN
  // (reported, not acted on).
  bool unscale_(optim::Optimizer& opt) const;
  float get_scale() const { return scale_; }

 private:
  float scale_;
};

}  // namespace hg::amp
