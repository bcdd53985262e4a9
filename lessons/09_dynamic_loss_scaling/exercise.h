#pragma once
// Chapter 09 exercise: a dynamic loss scaler — the skip decision and the scale rule.
//
// Backward ran on loss·S, so the .grad of every parameter the optimizer holds is S·g (or
// inf/NaN where S·g overflowed F16 on the way). StudentScaler does what GradScaler does
// after that; you write its two steps in exercise.cpp:
//
//   step(opt, max_norm)  bring the gradients back to g; clip them to max_norm (when
//                        max_norm > 0, with hg::amp::clip_grad_norm_); step the optimizer,
//                        unless a gradient was inf or NaN: then skip it, leaving parameters
//                        and optimizer state exactly as they were. Returns whether it stepped.
//   update()             the scale rule of "## 09"'s table, once per step, after step():
//                        an inf/NaN was found -> S · backoff_factor, counter 0;
//                        finite -> counter + 1, and when it reaches growth_interval,
//                        S · growth_factor and counter 0. Then S is kept inside
//                        [min_scale, max_scale], and a growth that would make S infinite is
//                        not applied (the counter still resets).
//
// The gradients are F32 tensors on the CPU: p.grad().data<float>(), p.grad().numel().
// exercise.cpp is yours; `./lab check 09` runs your scaler next to halfgrad's, step by step.
#include <cstdint>

#include "framework/amp/scale_rule.h"
#include "framework/optim/optimizer.h"
#include "framework/tensor/tensor.h"

class StudentScaler {
 public:
  explicit StudentScaler(hg::amp::ScaleRule rule) : rule_(rule), scale_(rule.init_scale) {}

  bool step(hg::optim::Optimizer& opt, double max_norm);  // exercise.cpp
  void update();                                          // exercise.cpp

  float scale() const { return scale_; }
  int64_t growth_tracker() const { return growth_tracker_; }

 private:
  hg::amp::ScaleRule rule_;
  float scale_;                 // S
  int64_t growth_tracker_ = 0;  // finite steps in a row since the last change of S
  bool found_inf_ = false;      // what step() saw, for update()
};
