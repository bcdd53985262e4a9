#include "framework/amp/scale_rule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace hg::amp {

void validate(const ScaleRule& r) {
  auto bad = [](const std::string& what) {
    throw std::invalid_argument("GradScaler: " + what);
  };
  // Written as !(ok) so that NaN, which fails every comparison, is refused too.
  if (!(r.growth_factor > 1.0) || !std::isfinite(r.growth_factor))
    bad(fmt::format("growth_factor must be a finite number > 1, got {}", r.growth_factor));
  if (!(r.backoff_factor > 0.0 && r.backoff_factor < 1.0))
    bad(fmt::format("backoff_factor must be in (0, 1), got {}", r.backoff_factor));
  if (r.growth_interval < 1)
    bad(fmt::format("growth_interval must be >= 1, got {}", r.growth_interval));
  if (!(r.min_scale >= kMinLossScale) || !std::isfinite(r.min_scale))
    bad(fmt::format("min_scale must be a finite number >= 2^-126 = {:g} (the smallest normal F32), got {:g}: "
                    "the scaler multiplies by 1/S, which is inf in F32 from S = 2^-128 down",
                    kMinLossScale, r.min_scale));
  if (!(r.max_scale >= r.min_scale))
    bad(fmt::format("need min_scale <= max_scale, got min_scale {:g}, max_scale {:g}", r.min_scale,
                    r.max_scale));
  if (!(r.init_scale >= r.min_scale && r.init_scale <= r.max_scale) || !std::isfinite(r.init_scale))
    bad(fmt::format("init_scale must be a finite number in [min_scale, max_scale] = [{:g}, {:g}], "
                    "got {:g}", r.min_scale, r.max_scale, r.init_scale));
}

ScaleState initial_state(const ScaleRule& r) { return ScaleState{r.init_scale, 0}; }

// S * factor as PyTorch's kernel computes it: F32 times double in double, rounded to F32 once.
static float times(float s, double factor) { return static_cast<float>(double(s) * factor); }

ScaleState next_scale(const ScaleState& st, bool found_inf, const ScaleRule& r) {
  ScaleState out = st;
  if (found_inf) {
    // Overshot: retreat at once and start counting good steps again.
    out.scale = times(st.scale, r.backoff_factor);
    out.growth_tracker = 0;
  } else {
    const int64_t successful = st.growth_tracker + 1;
    if (successful == r.growth_interval) {
      // growth_interval finite steps in a row: probe a larger scale.
      const float grown = times(st.scale, r.growth_factor);
      if (std::isfinite(grown)) out.scale = grown;
      out.growth_tracker = 0;
    } else {
      out.growth_tracker = successful;
    }
  }
  out.scale = std::min(std::max(out.scale, r.min_scale), r.max_scale);
  return out;
}

}  // namespace hg::amp
