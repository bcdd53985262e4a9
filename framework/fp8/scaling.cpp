#include "framework/fp8/scaling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace hg::fp8 {

float scale_from_amax(float amax, Format f, int margin, float previous) {
  if (!(amax > 0) || !std::isfinite(amax)) return previous;  // 0, negative, NaN, inf
  // In F32 as TE computes it: (fp8_max / amax) / 2^margin
  const float scale = max_value(f) / amax / float(FloatFormat::pow2(margin));
  // An amax below fp8_max / FLT_MAX (1.3e-36 for E4M3; an F32 subnormal, say) makes that
  // inf, which no cast can use: TE takes the largest float instead (quantization.py
  // _default_sf_compute, recipe_common.cuh compute_scale_from_amax).
  return std::isinf(scale) ? std::numeric_limits<float>::max() : scale;
}

// ---- 1. current --------------------------------------------------------------------------------
float current_scale(const Tensor& x, Format f, int margin) {
  return scale_from_amax(tile_amax(x, kPerTensor)[0], f, margin, 1.0f);
}

// ---- 2. delayed --------------------------------------------------------------------------------
DelayedScaling::DelayedScaling(Format format, int history_length, int margin)
    : format_(format), length_(history_length), margin_(margin) {
  if (history_length < 1)
    throw std::invalid_argument("DelayedScaling: the amax history needs at least 1 entry, got " +
                                std::to_string(history_length));
}

float DelayedScaling::history_amax() const {
  float m = 0;  // empty slots are zeros
  for (float a : history_) {
    if (std::isnan(a)) return a;
    m = std::max(m, a);
  }
  return m;
}

void DelayedScaling::update(float amax) {
  history_.push_front(amax);
  if (int(history_.size()) > length_) history_.pop_back();
  scale_ = scale_from_amax(history_amax(), format_, margin_, scale_);
}

// ---- 3. block ----------------------------------------------------------------------------------
std::vector<float> block_scales(const Tensor& x, Tile tile, Format f) {
  std::vector<float> s = tile_amax(x, tile);
  for (float& v : s) v = scale_from_amax(v, f, 0, 1.0f);
  return s;
}

// ---- 4. MX -------------------------------------------------------------------------------------
int mx_shared_exponent(float amax, Format f) {
  if (!(amax > 0) || !std::isfinite(amax)) return 0;  // X = 1
  int ex;
  std::frexp(amax, &ex);  // amax = m · 2^ex, m in [0.5, 1): floor(log2(amax)) = ex − 1
  const int e = (ex - 1) - float_format(f).max_exponent();
  return std::clamp(e, -127, 127);
}

std::vector<float> mx_scales(const Tensor& x, Format f) {
  std::vector<float> s = tile_amax(x, kMxBlock32);
  for (float& v : s) v = float(FloatFormat::pow2(-mx_shared_exponent(v, f)));  // 1/X, exact
  return s;
}

// ---- recipes -----------------------------------------------------------------------------------
const char* recipe_name(Recipe r) {
  switch (r) {
    case Recipe::Current: return "current";
    case Recipe::Delayed: return "delayed";
    case Recipe::Block: return "block";
    case Recipe::Mx: return "mx";
  }
  return "?";
}

Recipe parse_recipe(const std::string& name) {
  for (Recipe r : {Recipe::Current, Recipe::Delayed, Recipe::Block, Recipe::Mx})
    if (name == recipe_name(r)) return r;
  throw std::invalid_argument("unknown FP8 recipe '" + name + "' (expected current, delayed, block or mx)");
}

const char* role_name(Role r) {
  switch (r) {
    case Role::Input: return "x";
    case Role::Weight: return "w";
    case Role::GradOutput: return "dy";
  }
  return "?";
}

Format role_format(const RecipeConfig& c, Role r) {
  return c.hybrid && r == Role::GradOutput ? Format::E5M2 : Format::E4M3;
}

Tile role_tile(const RecipeConfig& c, Role r) {
  switch (c.recipe) {
    case Recipe::Current:
    case Recipe::Delayed: return kPerTensor;
    case Recipe::Block: return r == Role::Weight ? kBlock128x128 : kTile1x128;
    case Recipe::Mx: return kMxBlock32;
  }
  return kPerTensor;
}

}  // namespace hg::fp8
