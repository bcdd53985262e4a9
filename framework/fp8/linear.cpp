#include "framework/fp8/linear.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "framework/amp/autocast.h"
#include "framework/autograd/grad_mode.h"
#include "framework/autograd/node.h"
#include "framework/ops/ops.h"

namespace hg::fp8 {

namespace {

// (R, C) -> (C, R), a contiguous F32 copy: the layout the next TN GEMM reads along K.
Tensor transposed(const Tensor& x) {
  const int64_t R = x.size(0), C = x.size(1);
  const std::vector<float> v = x.to_vector();
  Tensor t = Tensor::empty({C, R});
  float* o = t.data<float>();
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) o[c * R + r] = v[size_t(r * C + c)];
  return t;
}

bool per_tensor(const RecipeConfig& c) { return c.recipe == Recipe::Current || c.recipe == Recipe::Delayed; }

}  // namespace

// ---- Scaler: one tensor's recipe state -------------------------------------------------------
Scaler::Scaler(const RecipeConfig& recipe, Role role, std::string name)
    : recipe_(recipe), role_(role), delayed_(role_format(recipe, role), recipe.history_length, recipe.margin) {
  last_.tensor = std::move(name);
  last_.format = role_format(recipe, role);
}

std::vector<float> Scaler::scales_for(const Tensor& x, Tile tile) {
  const Format f = role_format(recipe_, role_);
  switch (recipe_.recipe) {
    case Recipe::Current: return {current_scale(x, f, recipe_.margin)};
    case Recipe::Delayed: return {delayed_.scale()};  // from past steps; this step's amax comes after
    case Recipe::Block: return block_scales(x, tile, f);
    case Recipe::Mx: return mx_scales(x, f);
  }
  return {1.0f};
}

Fp8Tensor Scaler::quantize(const Tensor& x, bool update_history) {
  const Format f = role_format(recipe_, role_);
  const Tile tile = role_tile(recipe_, role_);
  Fp8Tensor q = hg::fp8::quantize(x, f, tile, scales_for(x, tile), Fp8Overflow::Saturate);
  last_.amax = tile_amax(x, kPerTensor)[0];
  if (recipe_.recipe == Recipe::Delayed && update_history) delayed_.update(last_.amax);
  last_.history_amax = recipe_.recipe == Recipe::Delayed ? delayed_.history_amax() : last_.amax;
  last_.scale = *std::min_element(q.scale.begin(), q.scale.end());
  last_.scale_max = *std::max_element(q.scale.begin(), q.scale.end());
  last_.stats = cast_stats(x, q);
  return q;
}

Fp8Tensor Scaler::quantize_transposed(const Tensor& xt, const Fp8Tensor& forward) const {
  const Format f = role_format(recipe_, role_);
  if (per_tensor(recipe_)) return hg::fp8::quantize(xt, f, kPerTensor, forward.scale, Fp8Overflow::Saturate);
  const Tile tile = role_tile(recipe_, role_);
  const std::vector<float> s = recipe_.recipe == Recipe::Mx ? mx_scales(xt, f) : block_scales(xt, tile, f);
  return hg::fp8::quantize(xt, f, tile, s, Fp8Overflow::Saturate);
}

LinearScalers::LinearScalers(const RecipeConfig& recipe, const std::string& layer, Accumulator a)
    : x(recipe, Role::Input, layer + ".x"),
      w(recipe, Role::Weight, layer + ".w"),
      dy(recipe, Role::GradOutput, layer + ".dy"),
      acc(a) {}

// ---- the op ------------------------------------------------------------------------------------
Tensor fp8_linear(const Tensor& x, const Tensor& w, const Tensor& b, const std::shared_ptr<LinearScalers>& s) {
  if (!x.defined() || !w.defined() || x.dim() != 2 || w.dim() != 2 || x.size(1) != w.size(1))
    throw std::invalid_argument(fmt::format("fp8_linear: expects x (N, in) and weight (out, in), got {} and {}",
                                            x.defined() ? shape_str(x.shape()) : "undefined",
                                            w.defined() ? shape_str(w.shape()) : "undefined"));
  if (x.dtype() != DType::F32 || w.dtype() != DType::F32)
    throw std::invalid_argument("fp8_linear: x and weight must be F32 (the FP8 casts happen inside)");
  const int64_t out = w.size(0);
  const bool training = grad_enabled();  // evaluation leaves the amax histories alone
  const Fp8Tensor qx = s->x.quantize(x, training), qw = s->w.quantize(w, training);  // (N, in), (out, in)
  Tensor y = gemm_tn(qx, qw, s->acc);                                 // (N, out)
  if (b.defined()) {
    if (b.shape() != Shape{out}) throw std::invalid_argument("fp8_linear: bias must have shape (out)");
    const std::vector<float> bv = b.to_vector();
    float* Y = y.data<float>();
    for (int64_t n = 0; n < y.size(0); ++n)
      for (int64_t o = 0; o < out; ++o) Y[n * out + o] += bv[size_t(o)];
  }

  // dx = dy·W (N, in),  dW = dyᵀ·x (out, in),  db = Σ_n dy (out); the GEMMs in FP8
  Tensor xd = x.detach(), wd = w.detach();
  return record("fp8_linear", y, {x, w, b}, [xd, wd, qx, qw, s](const Tensor& dy_in, const NeedsGrad& need) {
    const Tensor dy = dy_in.contiguous();
    const Fp8Tensor qdy = s->dy.quantize(dy, true);  // (N, out): A of dgrad
    Tensor dx, dw, db;
    if (need[0]) dx = gemm_tn(qdy, s->w.quantize_transposed(transposed(wd), qw), s->acc);  // B = Wᵀ (in, out)
    if (need[1])
      dw = gemm_tn(s->dy.quantize_transposed(transposed(dy), qdy),  // A = dyᵀ (out, N)
                   s->x.quantize_transposed(transposed(xd), qx), s->acc);  // B = xᵀ (in, N)
    if (need[2]) db = sum(dy, 0);
    return std::vector<Tensor>{dx, dw, db};
  });
}

// ---- the layer ---------------------------------------------------------------------------------
Fp8Linear::Fp8Linear(int64_t in, int64_t out, Generator& gen, const RecipeConfig& r, const std::string& name,
                     Accumulator acc)
    : nn::Linear(in, out, gen), recipe(r), scalers(std::make_shared<LinearScalers>(r, name, acc)) {}

// x (..., in) -> (..., out), as nn::Linear: the leading dims fold into N (a GPT's (B, T, C) is
// B·T rows of C). Under autocast x may arrive in BF16 or F16 (the output of attention's
// att·v): widening it to F32 is exact, and the FP8 cast inside sees the same values. The
// output is rounded to the autocast dtype, as Transformer Engine writes its FP8 GEMM's
// output in the activations' dtype: then an FP8 run differs from its BF16 baseline only in
// the GEMM's inputs. Without autocast it stays F32.
Tensor Fp8Linear::forward(const Tensor& x) {
  if (!x.defined() || x.dim() < 1 || x.size(x.dim() - 1) != in_features)
    throw std::invalid_argument(fmt::format("{}: expects x (..., {}), got {}", describe(), in_features,
                                            x.defined() ? shape_str(x.shape()) : "undefined"));
  Tensor x32 = x.dtype() == DType::F32 ? x : x.to(DType::F32);
  Tensor y;
  if (x.dim() == 2) {
    y = fp8_linear(x32, weight, bias, scalers);  // (N, out)
  } else {
    Shape out_shape = x.shape();
    out_shape.back() = out_features;
    y = reshape(fp8_linear(reshape(x32, {-1, in_features}), weight, bias, scalers), out_shape);  // (..., out)
  }
  return amp::autocast_enabled() ? y.to(amp::autocast_dtype()) : y;
}

std::string Fp8Linear::describe() const {
  return fmt::format("Fp8Linear({} -> {}, {} scaling, {})", in_features, out_features, recipe_name(recipe.recipe),
                     recipe.hybrid ? "HYBRID: E4M3 forward, E5M2 gradients" : "E4M3");
}

// ---- the run log -------------------------------------------------------------------------------
nlohmann::json fp8_scale_fields(const ScaleRecord& r) {
  const CastStats& s = r.stats;
  return {{"tensor", r.tensor},
          {"format", format_name(r.format)},
          {"amax", r.amax},
          {"scale", r.scale},
          {"scale_max", r.scale_max},
          {"history_amax", r.history_amax},
          {"underflow", s.nonzero ? double(s.underflow) / double(s.nonzero) : 0.0},
          {"saturated", s.saturated}};
}

void log_fp8_scales(io::RunLog& log, int64_t step, const std::vector<ScaleRecord>& records) {
  for (const ScaleRecord& r : records) log.event("fp8_scale", step, fp8_scale_fields(r));
}

}  // namespace hg::fp8
