#include "framework/amp/scale_rule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace hg::amp {

void validate(const ScaleRule& r) {
  auto bad = [](const std::string& what) {
    throw std::invalid_argument("GradScaler: " + what);
  };
  if (!(r.init_scale > 0.0f) || !std::isfinite(r.init_scale))
    bad("init_scale must be a finite number > 0, got " + std::to_string(r.init_scale));
  if (!(r.growth_factor > 1.0f))
    bad("growth_factor must be > 1, got " + std::to_string(r.growth_factor));
  if (!(r.backoff_factor > 0.0f && r.backoff_factor < 1.0f))
    bad("backoff_factor must be in (0, 1), got " + std::to_string(r.backoff_factor));
  if (r.growth_interval < 1)
    bad("growth_interval must be >= 1, got " + std::to_string(r.growth_interval));
  if (!(r.min_scale >= 0.0f) || !(r.max_scale >= r.min_scale))
    bad("need 0 <= min_scale <= max_scale, got min_scale " + std::to_string(r.min_scale) +
        ", max_scale " + std::to_string(r.max_scale));
}

static float clamp_scale(float s, const ScaleRule& r) {
  return std::min(std::max(s, r.min_scale), r.max_scale);
}

ScaleState initial_state(const ScaleRule& r) {
  return ScaleState{clamp_scale(r.init_scale, r), 0};
}

ScaleState next_scale(const ScaleState& st, bool found_inf, const ScaleRule& r) {
  ScaleState out = st;
  if (found_inf) {
    // Overshot: retreat at once and start counting good steps again.
    out.scale = st.scale * r.backoff_factor;
    out.growth_tracker = 0;
  } else {
    const int64_t successful = st.growth_tracker + 1;
    if (successful == r.growth_interval) {
      // growth_interval finite steps in a row: probe a larger scale.
      const float grown = st.scale * r.growth_factor;
      if (std::isfinite(grown)) out.scale = grown;
      out.growth_tracker = 0;
    } else {
      out.growth_tracker = successful;
    }
  }
  out.scale = clamp_scale(out.scale, r);
  return out;
}

}  // namespace hg::amp
