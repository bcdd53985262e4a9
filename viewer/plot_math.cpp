// The arithmetic behind the plots (see plot_math.h): every loop bounded before it starts.
#include "viewer/plot_math.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "framework/dtype/float_format.h"

namespace hg::viewer {

void sane_range(double& lo, double& hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  lo = std::clamp(lo, -1e300, 1e300), hi = std::clamp(hi, -1e300, 1e300);
  if (hi < lo) std::swap(lo, hi);
  // At least a billionth of the ends' size (and 1e-300): 1e17 .. 1e17 widens to a range
  // whose ends differ in doubles, 0 .. 0 to -1e-300 .. 1e-300 (then scaled by the plot).
  const double min_half = std::max(1e-300, std::max(std::fabs(lo), std::fabs(hi)) * 1e-9);
  if (hi - lo < 2 * min_half) {
    const double mid = lo / 2 + hi / 2;
    lo = mid - min_half, hi = mid + min_half;
  }
}

double nice_step(double range, int target_ticks) {
  if (!(range > 0) || !std::isfinite(range)) return 1;
  const double raw = range / std::max(1, target_ticks);
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  if (!(p > 0) || !std::isfinite(p)) return 1;
  for (double m : {1.0, 2.0, 5.0})
    if (m * p >= raw) return m * p;
  return 10 * p;
}

double fit_step(double step, double range, int max_ticks) {
  if (!(step > 0) || !std::isfinite(step) || !(range > 0) || !std::isfinite(range)) return step;
  const double ticks = range / step, most = std::max(1, max_ticks);
  if (ticks <= most) return step;
  return step * std::exp2(std::ceil(std::log2(ticks / most)));  // ticks / 2^k <= most
}

std::vector<double> linear_ticks(double lo, double hi, double step) {
  std::vector<double> out;
  if (!(step > 0) || !std::isfinite(step) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
  // The first and last multiples of step inside [lo, hi], as doubles (they may exceed int64).
  const double k0 = std::ceil(lo / step), k1 = std::floor(hi / step + 1e-9);
  if (!std::isfinite(k0) || !std::isfinite(k1) || k1 < k0) return out;
  const double n = std::min(k1 - k0 + 1, double(kMaxTicks));
  for (int i = 0; i < int(n); ++i) out.push_back((k0 + i) * step);
  return out;
}

std::vector<double> log10_ticks(double lo, double hi) {
  std::vector<double> out;
  if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo) return out;
  // Over many decades: powers of ten only, every 1, 2, 5, 10, 20 ... decades.
  if (hi - lo > 8) return linear_ticks(lo, hi, std::max(1.0, nice_step(hi - lo, 8)));
  // Decades k from floor(lo) - 1 to ceil(hi): at most 10 rounds.
  const int k0 = static_cast<int>(std::clamp(std::floor(lo) - 1, -1e6, 1e6));
  const int k1 = static_cast<int>(std::clamp(std::ceil(hi), -1e6, 1e6));
  for (const std::vector<double>& ms : {std::vector<double>{1, 2, 5}, {1}, {1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
    out.clear();
    for (int k = k0; k <= k1 && out.size() < size_t(kMaxTicks); ++k)
      for (double m : ms) {
        const double t = k + std::log10(m);
        if (t >= lo && t <= hi) out.push_back(t);
      }
    if (out.size() >= 3 && out.size() <= 8) break;
  }
  if (out.size() > size_t(kMaxTicks)) out.resize(kMaxTicks);
  return out;
}

float to_pixel(double v, float fallback) {
  if (std::isnan(v)) return fallback;
  return static_cast<float>(std::clamp(v, -1e6, 1e6));
}

int scale_shift(const GradHist& h) {
  if (!(h.scale > 0) || !std::isfinite(h.scale)) return 0;
  return static_cast<int>(std::lround(std::log2(h.scale)));  // |log2| <= 1075 for any double
}

HeatGrid heat_grid(const std::vector<GradHist>& hs, bool unscaled, int max_cols) {
  HeatGrid g;
  if (hs.empty() || max_cols < 1) return g;
  // FP16's limits as binary exponents: 2^-24 (smallest subnormal), 2^15 (binade of 65504).
  const int64_t e_sub = std::ilogb(kFP16.min_subnormal()), e_max = std::ilogb(kFP16.max_finite());
  // Rows: every exponent that holds a value, and FP16's limits, with a row of margin. In
  // int64: an exponent plus a shift cannot overflow, whatever the histogram says.
  int64_t lo = INT64_MAX, hi = INT64_MIN, cmax = 1;
  for (const GradHist& h : hs) {
    const int64_t s = unscaled ? scale_shift(h) : 0;
    lo = std::min(lo, e_sub - s - 2), hi = std::max(hi, e_max - s + 2);
    for (size_t i = 0; i < h.counts.size(); ++i) {
      if (h.counts[i] <= 0) continue;
      const int64_t e = int64_t(h.exp_min) + int64_t(i) - s;
      lo = std::min(lo, e - 1), hi = std::max(hi, e + 1);
      cmax = std::max(cmax, h.counts[i]);
    }
  }
  hi = std::min(hi, lo + kMaxHeatRows - 1);  // at most kMaxHeatRows rows
  g.e_lo = static_cast<int>(lo), g.e_hi = static_cast<int>(hi);
  g.rows = static_cast<int>(hi - lo + 1);
  g.cols = static_cast<int>(std::min<size_t>(hs.size(), size_t(max_cols)));
  g.t.assign(size_t(g.rows) * size_t(g.cols), 0.0f);
  const double log_cmax = std::log1p(double(cmax));
  // Column x holds the steps hs[n*x/cols .. n*(x+1)/cols): one each when they fit.
  const size_t n = hs.size();
  for (int x = 0; x < g.cols; ++x) {
    for (size_t k = n * size_t(x) / size_t(g.cols); k < n * size_t(x + 1) / size_t(g.cols); ++k) {
      const GradHist& h = hs[k];
      const int64_t s = unscaled ? scale_shift(h) : 0;
      for (size_t i = 0; i < h.counts.size(); ++i) {
        if (h.counts[i] <= 0) continue;
        const int64_t e = int64_t(h.exp_min) + int64_t(i) - s;
        if (e < lo || e > hi) continue;  // only when the rows were capped
        float& cell = g.t[size_t(hi - e) * size_t(g.cols) + size_t(x)];  // row 0: largest exponent
        cell = std::max(cell, float(std::log1p(double(h.counts[i])) / log_cmax));
      }
    }
  }
  return g;
}

Rgb heat_rgb(double t) {
  if (!(t > 0)) t = 0;  // NaN too
  if (t > 1) t = 1;
  static const float stops[5][3] = {{12, 10, 40}, {90, 20, 120}, {190, 55, 80}, {245, 140, 30}, {250, 240, 140}};
  const double s = t * 4;
  const int i = std::min(3, static_cast<int>(s));  // 0..3: s is in [0, 4]
  const double u = s - i;
  auto mix = [&](int c) { return static_cast<int>(stops[i][c] + (stops[i + 1][c] - stops[i][c]) * u); };
  return {mix(0), mix(1), mix(2)};
}

// ---- the Gradients panel: what a histogram of each format can say ---------------------

const char* per_layer_label(PerLayer s) {
  switch (s) {
    case PerLayer::Underflow: return "% below 2^-24 (FP16 underflow)";
    case PerLayer::Subnormal: return "% in FP16's subnormal range";
    case PerLayer::LostUpdates: return "% of updates lost (rounded away)";
    case PerLayer::Zeros: return "% exactly zero";
  }
  return "";
}

double per_layer_value(const GradHist& h, PerLayer s) {
  if (s == PerLayer::LostUpdates) return h.lost_update_fraction >= 0 ? 100.0 * h.lost_update_fraction : NAN;
  if (s == PerLayer::Underflow && h.dtype == GradDtype::F16) return NAN;  // already among the zeros
  if (h.total == 0) return 0;
  const int64_t n = s == PerLayer::Underflow ? h.fp16_underflow
                  : s == PerLayer::Subnormal ? h.fp16_subnormal
                                             : h.zeros;
  return 100.0 * double(n) / double(h.total);
}

PerLayerRange per_layer_range(const RunData& run) {
  PerLayerRange r;
  for (const auto& [param, hs] : run.grads) {
    for (const GradHist& h : hs) {
      r.f16 |= h.dtype == GradDtype::F16;
      r.unknown |= h.dtype == GradDtype::Unknown;
      r.wide |= h.dtype != GradDtype::F16 && h.dtype != GradDtype::Unknown;
      r.has_lost |= h.lost_update_fraction >= 0;
      for (int s = 0; s < kPerLayerSeries; ++s) {
        const double v = per_layer_value(h, PerLayer(s));
        if (v > r.ymax[s]) r.ymax[s] = v;  // NaN compares false: left out
      }
      r.xmax = std::max(r.xmax, double(h.step));
    }
  }
  return r;
}

PerLayer per_layer_shown(PerLayer asked, const PerLayerRange& r) {
  if (asked == PerLayer::Underflow && r.f16 && !r.wide && !r.unknown) return PerLayer::Zeros;
  if (asked == PerLayer::LostUpdates && !r.has_lost) return PerLayer::Subnormal;
  return asked;
}

std::string per_layer_note(PerLayer shown, const PerLayerRange& r) {
  const bool flat = r.ymax[int(shown)] == 0;
  const std::string none = "0% for every parameter at every step: ";
  switch (shown) {
    case PerLayer::Zeros:
      if (flat) return none + (r.f16 ? "no gradient value is 0, so none underflowed to 0" : "no exact zeros");
      if (r.f16)
        return "F16 values as backward made them: a gradient that underflowed is already 0, "
               "counted among the zeros";
      return "";
    case PerLayer::Underflow:
      if (r.f16)
        return "F16 steps have no point here: an F16 value is never below 2^-24, what "
               "underflowed is already 0 (see % exactly zero)";
      if (flat)
        return none + "no value below 2^-24" +
               (r.unknown ? " (the log does not say the format: had it been F16, an underflow "
                            "would be among the zeros)"
                          : "");
      if (!r.unknown) return "these BF16 or F32 values keep them; FP16 would round them to 0 (or up to 2^-24)";
      return "";
    case PerLayer::Subnormal:
      return flat ? none + "no value in FP16's subnormal range" : "";
    case PerLayer::LostUpdates:
      return flat ? none + "no update was rounded away" : "";
  }
  return "";
}

std::string below_fp16_label(GradDtype d) {
  switch (d) {
    case GradDtype::F16: return "below 2^-24: F16 holds no value here; one that underflowed is already 0, among the zeros";
    case GradDtype::BF16: return "FP16: below 2^-24 (BF16 keeps them)";
    case GradDtype::F32: return "FP16: below 2^-24 (F32 keeps them)";
    case GradDtype::F64: return "FP16: below 2^-24 (F64 keeps them)";
    case GradDtype::Unknown: break;
  }
  return "FP16: below 2^-24";
}

std::string grad_summary(const GradHist& h) {
  auto pct = [&](int64_t c) { return h.total > 0 ? 100.0 * double(c) / double(h.total) : 0.0; };
  const double log2_scale = h.scale > 0 && std::isfinite(h.scale) ? std::log2(h.scale) : 0.0;
  std::string format = grad_dtype_name(h.dtype);
  for (char& c : format) c = char(std::toupper(static_cast<unsigned char>(c)));
  std::string s = fmt::format("step {}   scale {:g} (2^{:g})   {} {}values:  ", h.step, h.scale, log2_scale,
                              h.total, format.empty() ? "" : format + " ");
  // F16 holds nothing below 2^-24 nor above 65504: its underflows are zeros, its overflows inf.
  if (h.dtype == GradDtype::F16)
    return s + fmt::format("zeros {:.2f}% (underflows included)   subnormal {:.2f}%   inf {} (overflows "
                           "included)   NaN {}",
                           pct(h.zeros), pct(h.fp16_subnormal), h.inf, h.nan);
  return s + fmt::format("zeros {:.2f}%   FP16 underflow {:.2f}%   subnormal {:.2f}%   overflow {:.3f}%   "
                         "inf {}   NaN {}",
                         pct(h.zeros), pct(h.fp16_underflow), pct(h.fp16_subnormal), pct(h.fp16_overflow),
                         h.inf, h.nan);
}

// ---- the FP8 panel ----------------------------------------------------------------------

void Log2Extent::add(double v) {
  if (!(v > 0) || !std::isfinite(v)) return;  // no log: 0, negative, inf, NaN
  const double e = std::log2(v);               // -1074 .. 1024
  lo = std::min(lo, e), hi = std::max(hi, e);
}

void Log2Extent::add_series(const std::vector<double>& values, double binades) {
  std::vector<double> logs;  // of the values that have one, in order
  for (double v : values)
    if (v > 0 && std::isfinite(v)) logs.push_back(std::log2(v));
  const size_t n = logs.size();
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    const bool far_before = i == 0 || std::fabs(logs[i] - logs[i - 1]) > binades;
    const bool far_after = i + 1 == n || std::fabs(logs[i] - logs[i + 1]) > binades;
    if (n > 1 && far_before && far_after) continue;  // isolated
    lo = std::min(lo, logs[i]), hi = std::max(hi, logs[i]);
    any = true;
  }
  if (!any)
    for (double e : logs) lo = std::min(lo, e), hi = std::max(hi, e);
}

void Log2Extent::range(double& y0, double& y1) const {
  if (empty()) {
    y0 = -1, y1 = 1;
    return;
  }
  y0 = std::floor(lo - 0.25), y1 = std::ceil(hi + 0.25);
}

std::vector<Fp8Column> fp8_columns(const std::vector<Fp8ScalePoint>& pts, double x0, double x1, int cols) {
  std::vector<Fp8Column> out;
  if (cols < 1 || !std::isfinite(x0) || !std::isfinite(x1) || !(x1 > x0)) return out;
  // Keeps the largest (or smallest) of the finite positive values: NaN means none yet.
  auto keep_max = [](double& a, double v) {
    if (v > 0 && std::isfinite(v) && !(a >= v)) a = v;
  };
  auto keep_min = [](double& a, double v) {
    if (v > 0 && std::isfinite(v) && !(a <= v)) a = v;
  };
  for (const Fp8ScalePoint& p : pts) {
    const double at = (double(p.step) - x0) / (x1 - x0) * cols;  // checked before the cast to int
    if (!(at >= 0 && at <= cols)) continue;
    const int c = std::min(cols - 1, static_cast<int>(at));
    if (out.empty() || out.back().col != c) {
      out.emplace_back();
      out.back().col = c;
      out.back().step = p.step;
    }
    Fp8Column& k = out.back();
    keep_max(k.amax, p.amax);
    keep_max(k.history_amax, p.history_amax);
    keep_min(k.scale, p.scale);
    keep_max(k.scale_max, p.scale_max);
    keep_max(k.product, p.amax * p.scale);  // inf when the product overflows: left out
    k.underflow = std::max(k.underflow, p.underflow);
    k.saturated = p.saturated > INT64_MAX - k.saturated ? INT64_MAX : k.saturated + p.saturated;
    k.nonfinite_amax |= !std::isfinite(p.amax);
  }
  return out;
}

Fp8Summary fp8_summary(const std::vector<Fp8ScalePoint>& pts, double fp8_max) {
  Fp8Summary s;
  std::vector<double> headroom;
  double underflow_sum = 0;
  for (const Fp8ScalePoint& p : pts) {
    s.steps++;
    underflow_sum += p.underflow;
    if (p.underflow > s.max_underflow || s.max_underflow_step < 0)
      s.max_underflow = p.underflow, s.max_underflow_step = p.step;
    if (p.saturated > 0) {
      s.saturated = p.saturated > INT64_MAX - s.saturated ? INT64_MAX : s.saturated + p.saturated;
      s.saturated_steps++;
      if (s.first_saturated < 0) s.first_saturated = p.step;
      s.last_saturated = p.step;
    }
    s.nonfinite_amax += !std::isfinite(p.amax);
    const double product = p.amax * p.scale;
    if (product > 0 && std::isfinite(product) && fp8_max > 0 && std::isfinite(fp8_max))
      headroom.push_back(std::log2(fp8_max) - std::log2(product));
  }
  if (s.steps > 0) s.mean_underflow = underflow_sum / double(s.steps);
  if (!headroom.empty()) {
    std::sort(headroom.begin(), headroom.end());
    s.min_headroom = headroom.front();
    const size_t n = headroom.size();
    s.median_headroom = n % 2 ? headroom[n / 2] : (headroom[n / 2 - 1] + headroom[n / 2]) / 2;
  }
  return s;
}

std::vector<TensorGroup> group_by_layer(const std::vector<std::string>& tensors) {
  std::vector<TensorGroup> out;
  std::map<std::string, size_t> index;  // layer -> its place in `out` (4096 tensors at most)
  for (const std::string& t : tensors) {
    const size_t dot = t.rfind('.');
    const std::string layer = dot == std::string::npos ? t : t.substr(0, dot);
    auto [it, added] = index.emplace(layer, out.size());
    if (added) out.push_back({layer, {}, {}});
    TensorGroup& g = out[it->second];
    g.tensors.push_back(t);
    g.roles.push_back(dot == std::string::npos ? "" : t.substr(dot + 1));
  }
  return out;
}

std::string exponent_text(const Decomposed& d, int bias) {
  char text[160];
  switch (d.cls) {
    case FloatClass::Normal:
      std::snprintf(text, sizeof text, "%d   (field %u - bias %d)", d.unbiased_exponent, d.exponent_field, bias);
      break;
    case FloatClass::Subnormal:
      std::snprintf(text, sizeof text, "%d   (field 0: subnormal, scaled as the smallest normal, 1 - bias %d)",
                    1 - bias, bias);
      break;
    case FloatClass::Zero:
      std::snprintf(text, sizeof text, "none   (field 0 and mantissa 0: zero)");
      break;
    default:
      std::snprintf(text, sizeof text, "none   (field %u: %s)", d.exponent_field, to_string(d.cls));
  }
  return text;
}

}  // namespace hg::viewer
