#include "framework/amp/grad_stats.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace hg::amp {

int binary_exponent(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const int field = int((bits >> 23) & 0xff);
  if (field != 0) return field - 127;  // normal float: the exponent is stored
  return std::ilogb(x);                // subnormal float (< 2^-126): rare, take the slow path
}

GradHistogram::GradHistogram(std::string param_name, double loss_scale, int lo, int hi)
    : param(std::move(param_name)), scale(loss_scale), exp_min(lo), exp_max(hi),
      counts(size_t(hi - lo + 1), 0) {
  if (hi < lo) throw std::invalid_argument("GradHistogram: exp_max < exp_min");
}

void GradHistogram::add(const float* g, int64_t n) {
  // FP16's limits, from its one description.
  const float underflow_below = float(kFP16.min_subnormal());  // 2^-24
  const float normal_from = float(kFP16.min_normal());         // 2^-14
  const float overflow_above = float(kFP16.max_finite());      // 65504
  for (int64_t i = 0; i < n; ++i) {
    const float v = g[i];
    const float a = std::fabs(v);
    if (std::isnan(v)) { ++nan; continue; }
    if (std::isinf(v)) { ++inf; continue; }
    if (a == 0.0f) { ++zeros; continue; }
    if (a < underflow_below) ++fp16_underflow;
    else if (a < normal_from) ++fp16_subnormal;
    else if (a > overflow_above) ++fp16_overflow;
    const int e = binary_exponent(a);
    if (e < exp_min) ++below;
    else if (e > exp_max) ++above;
    else ++counts[size_t(e - exp_min)];
  }
  total += n;
}

nlohmann::json GradHistogram::to_event(int64_t step) const {
  nlohmann::json j = {{"type", "grad_hist"},
                      {"step", step},
                      {"param", param},
                      {"scale", scale},
                      {"exp_min", exp_min},
                      {"exp_max", exp_max},
                      {"counts", counts},
                      {"below", below},
                      {"above", above},
                      {"zeros", zeros},
                      {"fp16_underflow", fp16_underflow},
                      {"fp16_subnormal", fp16_subnormal},
                      {"fp16_overflow", fp16_overflow},
                      {"inf", inf},
                      {"nan", nan},
                      {"total", total}};
  if (!dtype.empty()) j["dtype"] = dtype;
  if (lost_update_fraction >= 0.0) j["lost_update_fraction"] = lost_update_fraction;
  return j;
}

bool update_is_lost(double w, double delta, const FloatFormat& f) {
  if (delta == 0.0) return true;  // nothing to lose; callers skip these
  if (!std::isfinite(w) || !std::isfinite(delta)) return false;
  const int m = f.mantissa_bits;
  const int emin = f.min_exponent();
  // Spacing (ULP) of the representable values in the binade of w.
  const int e = (w == 0.0) ? emin : std::max(std::ilogb(w), emin);
  double spacing = std::ldexp(1.0, e - m);
  // Moving toward zero from an exact power of two, the next value down is in the binade
  // below, where the spacing is half as large (1 - 2^-11 sits below 1 in FP16).
  const bool toward_zero = (w > 0.0) != (delta > 0.0);
  if (w != 0.0 && toward_zero && std::fabs(w) == std::ldexp(1.0, e) && e > emin) spacing *= 0.5;
  const double half = 0.5 * spacing, a = std::fabs(delta);
  if (a < half) return true;
  if (a > half) return false;
  // Exactly half way: ties go to the neighbour with an even last mantissa bit. w's own last
  // bit is even exactly when w / ulp(w) is an even integer.
  const double k = std::fabs(w) / std::ldexp(1.0, e - m);
  return std::fmod(k, 2.0) == 0.0;
}

double lost_update_fraction(const float* w, const float* delta, int64_t n, const FloatFormat& f) {
  int64_t moved = 0, lost = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (delta[i] == 0.0f) continue;
    ++moved;
    if (update_is_lost(w[i], delta[i], f)) ++lost;
  }
  return moved == 0 ? 0.0 : double(lost) / double(moved);
}

}  // namespace hg::amp
