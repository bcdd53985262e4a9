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
//
// Then S is clamped to [min_scale, max_scale]. Growth that would make S infinite is not
// applied (PyTorch does the same): the tracker still resets.
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

struct ScaleRule {
  float init_scale = 65536.0f;  // 2^16
  float growth_factor = 2.0f;
  float backoff_factor = 0.5f;
  int64_t growth_interval = 2000;
  float min_scale = 0.0f;  // optional bounds; the defaults do not bind
  float max_scale = std::numeric_limits<float>::infinity();
};

struct ScaleState {
  float scale = 65536.0f;
  int64_t growth_tracker = 0;  // consecutive finite steps since the last change
};

// Checks a rule's fields (factors, interval, bounds) and throws std::invalid_argument
// naming the bad field.
void validate(const ScaleRule& rule);

// The initial state of a rule: S = init_scale clamped to the bounds, tracker 0.
ScaleState initial_state(const ScaleRule& rule);

// One step of the rule. Pure: same inputs, same output.
ScaleState next_scale(const ScaleState& state, bool found_inf, const ScaleRule& rule);

}  // namespace hg::amp
