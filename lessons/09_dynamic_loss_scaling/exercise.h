#pragma once
// Chapter 09 exercise: the dynamic loss scaler's update rule.
//
// After each optimizer step the scale S changes by the rule (PyTorch's GradScaler):
//   an inf/NaN was found:   S ← S · backoff_factor,  tracker ← 0
//   all finite:             tracker ← tracker + 1; when it reaches growth_interval,
//                           S ← S · growth_factor and tracker ← 0
//   then S is clamped to [min_scale, max_scale]; a growth that would make S infinite is
//   not applied (the tracker still resets).
//
// exercise.cpp is yours; `./lab check 09` grades it against scripted sequences.
#include "framework/amp/scale_rule.h"

hg::amp::ScaleState student_next_scale(const hg::amp::ScaleState& state, bool found_inf,
                                       const hg::amp::ScaleRule& rule);
