#include "framework/amp/grad_scaler.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "framework/amp/unscale.h"
#include "framework/ops/elementwise.h"

namespace hg::amp {

namespace {
// PyTorch refuses to unscale F16 gradients (GradScaler._unscale_grads_ raises "Attempting
// to unscale FP16 gradients."). Checked for every gradient before any is touched.
void refuse_f16_grads(const optim::Optimizer& opt, float scale) {
  const std::vector<Tensor>& params = opt.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor g = params[i].grad();
    if (!g.defined() || g.dtype() != DType::F16) continue;
    throw std::invalid_argument(fmt::format(
        "GradScaler::unscale_: Attempting to unscale FP16 gradients. Parameter {} has an F16 "
        "gradient, which holds S·g: divided by S = {:g} in F16, the small values the scale "
        "lifted into F16's range fall back out of it (S = 65536 turns 2^-10 into 2^-26, "
        "below F16's smallest subnormal 2^-24, so it becomes 0). Keep an F32 master copy of "
        "the F16 parameters and give the scaler the optimizer of the master copies (chapter 07, "
        "hg::amp::MasterWeights), or keep the parameters F32 under autocast (chapter 10).",
        i, scale));
  }
}
}  // namespace

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
  const auto it = per_opt_.find(&opt);
  if (it != per_opt_.end() && it->second.unscaled)
    throw std::logic_error(
        "GradScaler::unscale_: already called for this optimizer since the last update(); "
        "a second call would divide the gradients by the scale twice");
  if (it != per_opt_.end() && it->second.stepped)
    throw std::logic_error("GradScaler::unscale_: called after step(); call it before step()");
  refuse_f16_grads(opt, state_.scale);  // before any record: a refused call leaves none
  PerOptimizer& rec = per_opt_[&opt];
  // 1/S in double, rounded to F32 once (PyTorch: scale.double().reciprocal().float()). The
  // rule keeps S in [2^-126, 3.4e38] (scale_rule.h), so 1/S is finite and not 0.
  const float inv = float(1.0 / double(state_.scale));
  const bool found_here = unscale_grads_(opt.params(), inv);  // checks the unscaled values
  rec.found_inf = reducer_ ? reducer_(found_here) : found_here;
  rec.unscaled = true;
  ++checks_;
}

bool GradScaler::step(optim::Optimizer& opt) {
  if (!enabled_) {
    opt.step();
    return true;
  }
  const auto it = per_opt_.find(&opt);
  if (it != per_opt_.end() && it->second.stepped)
    throw std::logic_error("GradScaler::step: already called for this optimizer since the last "
                           "update(); call update() once per iteration");
  if (it == per_opt_.end() || !it->second.unscaled) unscale_(opt);
  PerOptimizer& rec = per_opt_.at(&opt);
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
  const std::string who = "GradScaler::load_state_dict: ";
  if (!s.is_object()) throw std::invalid_argument(who + "the state is not a JSON object");
  auto need = [&](const char* key) -> const nlohmann::json& {
    if (!s.contains(key)) throw std::invalid_argument(who + "missing field '" + key + "'");
    return s.at(key);
  };
  const ScaleRule defaults;
  ScaleRule r = rule_;
  ScaleState st;
  bool enabled = enabled_;
  try {
    st.scale = need("scale").get<float>();
    st.growth_tracker = need("growth_tracker").get<int64_t>();
    r.growth_factor = need("growth_factor").get<double>();
    r.backoff_factor = need("backoff_factor").get<double>();
    r.growth_interval = need("growth_interval").get<int64_t>();
    // The bounds (see the header for state dicts written before they were enforced).
    r.min_scale = defaults.min_scale;
    if (s.contains("min_scale") && s.at("min_scale") != 0) r.min_scale = s.at("min_scale").get<float>();
    r.max_scale = defaults.max_scale;
    if (s.contains("max_scale")) {
      const auto& mx = s.at("max_scale");
      if (mx.is_string() && mx.get<std::string>() != "inf")
        throw std::invalid_argument(who + "max_scale must be a number or \"inf\", got " + mx.dump());
      r.max_scale = mx.is_string() ? INFINITY : mx.get<float>();
    }
    enabled = need("enabled").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(who + "bad field: " + e.what());
  }
  r.init_scale = r.min_scale;  // for now, so that validate() judges the loaded fields alone
  validate(r);
  if (!(st.scale >= r.min_scale && st.scale <= r.max_scale) || !std::isfinite(st.scale))
    throw std::invalid_argument(fmt::format("{}scale {:g} is outside [min_scale, max_scale] = [{:g}, {:g}]",
                                            who, st.scale, r.min_scale, r.max_scale));
  if (st.growth_tracker < 0 || st.growth_tracker >= r.growth_interval)
    throw std::invalid_argument(fmt::format("{}growth_tracker must be in [0, growth_interval = {}), got {}",
                                            who, r.growth_interval, st.growth_tracker));
  r.init_scale = st.scale;  // as PyTorch's load_state_dict: the saved scale is the new start
  rule_ = r;
  state_ = st;
  enabled_ = enabled;
  per_opt_.clear();
}

StaticScaler::StaticScaler(float scale) : scale_(scale) {
  // The same bounds as a dynamic scale (scale_rule.h): 1/S must be a finite F32.
  if (!(scale >= kMinLossScale) || !std::isfinite(scale))
    throw std::invalid_argument(fmt::format(
        "StaticScaler: the loss scale must be a finite number >= 2^-126 = {:g} (so that 1/S is a "
        "finite F32), got {:g}", kMinLossScale, scale));
}

Tensor StaticScaler::scale(const Tensor& loss) const { return mul(loss, double(scale_)); }

bool StaticScaler::unscale_(optim::Optimizer& opt) const {
  return unscale_grads_(opt.params(), float(1.0 / double(scale_)));
}

}  // namespace hg::amp
