#include "framework/optim/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hg::optim {

LRSchedule LRSchedule::constant(double base) {
  LRSchedule s;
  s.base_lr = base;
  return s;
}

LRSchedule LRSchedule::step(double base, int64_t step_size, double gamma) {
  if (step_size < 1) throw std::invalid_argument("step LR schedule: step_size must be >= 1");
  LRSchedule s;
  s.kind = Kind::Step;
  s.base_lr = base;
  s.step_size = step_size;
  s.gamma = gamma;
  return s;
}

LRSchedule LRSchedule::cosine(double base, int64_t total, double min_lr, int64_t warmup) {
  if (total < 1) throw std::invalid_argument("cosine LR schedule: total must be >= 1");
  if (warmup < 0) throw std::invalid_argument("cosine LR schedule: warmup must be >= 0");
  LRSchedule s;
  s.kind = Kind::Cosine;
  s.base_lr = base;
  s.total = total;
  s.min_lr = min_lr;
  s.warmup = warmup;
  return s;
}

LRSchedule::Kind LRSchedule::parse_kind(const std::string& name) {
  if (name == "constant") return Kind::Constant;
  if (name == "step") return Kind::Step;
  if (name == "cosine") return Kind::Cosine;
  throw std::invalid_argument("unknown LR schedule '" + name + "' (known: constant, step, cosine)");
}

double LRSchedule::lr_at(int64_t t) const {
  const double pi = 3.14159265358979323846;
  switch (kind) {
    case Kind::Constant: return base_lr;
    case Kind::Step: return base_lr * std::pow(gamma, static_cast<double>(t / step_size));
    case Kind::Cosine: {
      if (t < warmup) return base_lr * static_cast<double>(t + 1) / static_cast<double>(warmup);
      const double u = std::min<double>(static_cast<double>(t - warmup), static_cast<double>(total));
      return min_lr + (base_lr - min_lr) * (1.0 + std::cos(pi * u / static_cast<double>(total))) / 2.0;
    }
  }
  return base_lr;
}

}  // namespace hg::optim
