#include "framework/amp/grad_scaler.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "framework/amp/unscale.h"
#include "framework/ops/elementwise.h"

namespace hg::amp {

GradScaler::GradScaler(ScaleRule rule, bool enabled) : rule_(rule), enabled_(enabled) {
  validate(rule_);
  state_ = initial_state(rule_);
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!enabled_) return loss;
  return mul(loss, double(state_.scale));
}

void GradScaler::unscale_(optim::Optimizer& opt) {
  if (!enabled_) return;
  PerOptimizer& rec = per_opt_[&opt];
  if (rec.unscaled)
    throw std::logic_error(
        "GradScaler::unscale_: already called for this optimizer since the last update(); "
        "a second call would divide the gradients by the scale twice");
  if (rec.stepped)
    throw std::logic_error("GradScaler::unscale_: called after step(); call it before step()");
  // 1/S in double, then rounded to F32 (S is a power of two unless a rule makes it not).
  const float inv = float(1.0 / double(state_.scale));
  rec.found_inf = unscale_grads_(opt.params(), inv);
  rec.unscaled = true;
  ++checks_;
}

bool GradScaler::step(optim::Optimizer& opt) {
  if (!enabled_) {
    opt.step();
    return true;
  }
  PerOptimizer& rec = per_opt_[&opt];
  if (rec.stepped)
    throw std::logic_error("GradScaler::step: already called for this optimizer since the last "
                           "update(); call update() once per iteration");
  if (!rec.unscaled) unscale_(opt);
  rec.stepped = true;
  if (rec.found_inf) return false;  // skip: parameters and optimizer state untouched
  opt.step();
  return true;
}

void GradScaler::update() {
  if (!enabled_) return;
  if (per_opt_.empty())
    throw std::logic_error("GradScaler::update: no unscale_() or step() since the last update()");
  bool found = false;
  for (const auto& [opt, rec] : per_opt_) found = found || rec.found_inf;
  state_ = next_scale(state_, found, rule_);
  last_found_inf_ = found;
  per_opt_.clear();
}

nlohmann::json GradScaler::state_dict() const {
  return {{"scale", state_.scale},
          {"growth_tracker", state_.growth_tracker},
          {"growth_factor", rule_.growth_factor},
          {"backoff_factor", rule_.backoff_factor},
          {"growth_interval", rule_.growth_interval},
          {"min_scale", rule_.min_scale},
          {"max_scale", std::isfinite(rule_.max_scale) ? nlohmann::json(rule_.max_scale)
                                                       : nlohmann::json("inf")},
          {"enabled", enabled_}};
}

void GradScaler::load_state_dict(const nlohmann::json& s) {
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!s.is_object() || !s.contains(key))
      throw std::invalid_argument(std::string("GradScaler::load_state_dict: missing field '") +
                                  key + "'");
    return s.at(key);
  };
  ScaleRule r = rule_;
  ScaleState st;
  try {
    st.scale = need("scale").get<float>();
    st.growth_tracker = need("growth_tracker").get<int64_t>();
    r.growth_factor = need("growth_factor").get<float>();
    r.backoff_factor = need("backoff_factor").get<float>();
    r.growth_interval = need("growth_interval").get<int64_t>();
    r.min_scale = need("min_scale").get<float>();
    const auto& mx = need("max_scale");
    r.max_scale = mx.is_string() ? INFINITY : mx.get<float>();
    enabled_ = need("enabled").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("GradScaler::load_state_dict: bad field: ") + e.what());
  }
  validate(r);
  if (!(st.scale > 0.0f) || st.growth_tracker < 0)
    throw std::invalid_argument("GradScaler::load_state_dict: scale must be > 0 and "
                                "growth_tracker >= 0");
  rule_ = r;
  state_ = st;
  per_opt_.clear();
}

StaticScaler::StaticScaler(float scale) : scale_(scale) {
  if (!(scale > 0.0f) || !std::isfinite(scale))
    throw std::invalid_argument("StaticScaler: the loss scale must be a finite number > 0, got " +
                                std::to_string(scale));
}

Tensor StaticScaler::scale(const Tensor& loss) const { return mul(loss, double(scale_)); }

bool StaticScaler::unscale_(optim::Optimizer& opt) const {
  return unscale_grads_(opt.params(), float(1.0 / double(scale_)));
}

}  // namespace hg::amp
