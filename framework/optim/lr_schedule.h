#pragma once
// Learning-rate schedules: the lr as a function of a counter t (epochs or steps — the
// caller decides which, and calls opt.set_lr(schedule.lr_at(t)) before the updates of t).
// They hold no state, so a resumed run only needs t to be back on schedule.
//
//   constant:  lr(t) = base
//   step:      lr(t) = base · γ^⌊t / step_size⌋                 (PyTorch's StepLR)
//   cosine:    lr(t) = min + (base − min) · (1 + cos(π · t / T)) / 2,  t ≤ T
//              optionally after `warmup` counts rising linearly from base/warmup to base
//              (PyTorch's CosineAnnealingLR, closed form, plus warmup)
#include <cstdint>
#include <string>

namespace hg::optim {

struct LRSchedule {
  enum class Kind { Constant, Step, Cosine };
  Kind kind = Kind::Constant;
  double base_lr = 0.01;
  int64_t step_size = 1;   // Step
  double gamma = 0.1;      // Step
  int64_t total = 1;       // Cosine: T, counted after the warmup
  double min_lr = 0.0;     // Cosine
  int64_t warmup = 0;      // Cosine

  static LRSchedule constant(double base);
  static LRSchedule step(double base, int64_t step_size, double gamma);
  static LRSchedule cosine(double base, int64_t total, double min_lr = 0.0, int64_t warmup = 0);
  // "constant", "step", "cosine" (for command lines); throws listing the names otherwise.
  static Kind parse_kind(const std::string& name);

  double lr_at(int64_t t) const;
};

}  // namespace hg::optim
