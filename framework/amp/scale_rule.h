#pragma once
// The dynamic loss-scale rule as a small state machine (PyTorch's GradScaler semantics).
//
// State: the current scale S and a counter of consecutive finite steps ("growth tracker").
// One transition per optimizer step (per effective batch under gradient accumulation):
//
//   found inf/NaN :  S <- S * backoff_factor (0.5),  tracker <- 0      (the step is skipped)
//   all finite    :  tracker <- tracker + 1
//                    if tracker == growth_interval (2000):
//                        S <- S * growth_factor (2), tracker <- 0
//   then          :  S <- clamp(S, min_scale, max_scale)
//
// S is an F32 and the factors are doubles, as in PyTorch (an F32 tensor times a Python
// float): S * factor is a double product rounded to F32 once. (Rounding the factor to F32
// first gives other bits: 3 * 1.1 is 0x40533333 the first way, 0x40533334 the second.)
// A growth whose F32 result would be inf is not applied (PyTorch does the same); the
// tracker still resets.
//
// The bounds. The scaler unscales with the reciprocal 1/S, so both S and 1/S must be
// finite F32 numbers:
//   min_scale >= 2^-126, the smallest normal F32: 1/2^-126 = 2^126 is finite. From 2^-128
//             down 1/S is inf, and a gradient of 0 would be unscaled to 0 * inf = NaN.
//   max_scale: any F32 >= min_scale; the largest, 3.4e38, is the default, and +inf means
//             "no maximum". 1/3.4e38 = 2.9e-39 is a subnormal, but not 0.
// The defaults are those two limits, so they bind only in a run that overflows 142 times in
// a row (2^16 down to 2^-126) or grows 111 times (222,000 good steps); PyTorch has no bounds
// (its users asked for them, pytorch#99640). Narrower bounds are a choice of the run (e.g.
// min_scale 1: never scale the loss down).
//
// Why this shape: an overflow is cheap to detect and costs one skipped step, so the rule
// probes upward (every 2000 good steps) and retreats at once when it overshoots. Over a run
// the scale draws a sawtooth that hugs the largest scale the gradients tolerate.
//
// This header knows nothing about tensors, so the rule can be tested (and taught) alone;
// GradScaler (grad_scaler.h) applies it to real gradients.
#include <cstdint>
#include <limits>

namespace hg::amp {

// The bounds a rule's scale may take (see above): S and 1/S are finite F32 numbers.
constexpr float kMinLossScale = std::numeric_limits<float>::min();  // 2^-126
constexpr float kMaxLossScale = std::numeric_limits<float>::max();  // 3.4e38

struct ScaleRule {
  float init_scale = 65536.0f;  // 2^16
  double growth_factor = 2.0;   // doubles, as PyTorch's Python floats (see above)
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  float min_scale = kMinLossScale;  // the scale never goes below ...
  float max_scale = kMaxLossScale;  // ... or above these (+inf: no maximum)
};

struct ScaleState {
  float scale = 65536.0f;
  int64_t growth_tracker = 0;  // consecutive finite steps since the last change
};

// Checks a rule's fields and throws std::invalid_argument naming the bad field: factors
// (growth finite and > 1, backoff in (0, 1)), interval >= 1, bounds (kMinLossScale <=
// min_scale <= max_scale; NaN fails) and a finite init_scale within the bounds.
void validate(const ScaleRule& rule);

// The initial state of a rule: S = init_scale, tracker 0.
ScaleState initial_state(const ScaleRule& rule);

// One step of the rule. Pure: same inputs, same output.
ScaleState next_scale(const ScaleState& state, bool found_inf, const ScaleRule& rule);

}  // namespace hg::amp
