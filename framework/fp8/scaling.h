#pragma once
// How a tensor's FP8 scale is chosen: the four recipes, each a small state machine.
//
// Every recipe wants the same thing: the largest magnitude (amax) of what it casts to land
// at (or just below) the format's maximum, so the small values keep as much of FP8's few
// binades as they can. They differ in *which* amax and *how much* of the tensor shares it:
//
//   recipe            amax of                      shares one scale          source
//   current           this tensor, now             the whole tensor          TE Float8CurrentScaling
//   delayed           the last L steps' amaxes     the whole tensor          TE DelayedScaling
//   block             this tile, now               1×128 tile / 128×128      DeepSeek-V3
//   MX                this block, now              32 values, power of two   OCP Microscaling
//
// Why delayed: the amax of the tensor being cast is only known after a pass over it, which
// costs a read of the whole tensor before the cast. Delayed scaling casts with a scale from
// the *previous* steps' amaxes and records this step's amax as it casts, for the next step.
// The price: a value that jumps past the history's max saturates for a step.
//
// Why blocks: one outlier sets the scale of everything that shares it. With one scale per
// tensor, a channel 1000× larger than the rest pushes the rest 10 binades down, where E4M3
// has no values left (lessons/14_fp8 shows it). A scale per 128 values confines the damage.
//
// The scale rule (Transformer Engine: transformer_engine/pytorch/quantization.py
// _default_sf_compute for delayed scaling, common/recipe/recipe_common.cuh
// compute_scale_from_amax for current and block scaling):
//   scale = fp8_max · 2^−margin / amax, and the previous scale is kept when amax is 0
//   (nothing to scale by) or not finite (an overflowed step must not poison the scale);
//   a scale that comes out inf in F32 (amax below fp8_max / FLT_MAX ≈ 1.3e-36 for E4M3:
//   a tensor of F32 subnormals, tiny gradients) is FLT_MAX, so the tensor still casts.
// fp8_max is 448 for E4M3, 57344 for E5M2. margin (in binades) leaves headroom for growth.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "framework/fp8/fp8_tensor.h"

namespace hg::fp8 {

// The rule above. `previous` is returned when amax is 0, negative or not finite; FLT_MAX
// when the scale would be inf.
float scale_from_amax(float amax, Format f, int margin, float previous);

// ---- 1. current scaling ------------------------------------------------------------------------
// One scale for the tensor from its own amax (1 when the tensor is all zeros or not finite,
// FLT_MAX when its amax is so small that the scale passes F32's range).
float current_scale(const Tensor& x, Format f, int margin = 0);

// ---- 2. delayed scaling --------------------------------------------------------------------------
//   state: history (the last `length` amaxes, newest first; empty slots count as 0), scale
//          (starts at 1)
//   scale()       the scale to cast with at this step
//   update(amax)  after casting: this step's amax enters the history (the oldest leaves),
//                 then scale = rule(max over the history, previous scale)
// A NaN in the history makes its max NaN, so the scale stays frozen until it leaves: one
// bad step costs `length` steps without a scale update (as in Transformer Engine).
class DelayedScaling {
 public:
  explicit DelayedScaling(Format format, int history_length = 1024, int margin = 0);
  float scale() const { return scale_; }
  void update(float amax);
  float history_amax() const;                         // max over the history (NaN if any)
  const std::deque<float>& history() const { return history_; }
  Format format() const { return format_; }
  int length() const { return length_; }
  int margin() const { return margin_; }

 private:
  Format format_;
  int length_, margin_;
  std::deque<float> history_;  // newest first, at most length_ entries
  float scale_ = 1.0f;
};

// ---- 3. block scaling (DeepSeek-V3) -------------------------------------------------------------
// One scale per tile, from the tile's own amax: fp8_max / amax (1 for an all-zero tile,
// FLT_MAX for a tile of subnormals).
// Activations and gradients use 1×128 tiles along K; weights 128×128 blocks.
std::vector<float> block_scales(const Tensor& x, Tile tile, Format f);

// ---- 4. MX (OCP Microscaling v1.0) ------------------------------------------------------------
// Blocks of 32 consecutive values along K share one scale X = 2^e, stored in E8M0 (8
// exponent bits, no sign, no mantissa: the byte is e + 127; 0xFF is NaN). The spec's rule:
//   e = floor(log2(amax)) − emax_elem     emax_elem = 8 (E4M3: 448 = 1.75·2^8), 15 (E5M2)
// so amax / X lands in [2^emax_elem, 2^(emax_elem+1)): the top binade, where it may pass the
// format's max (1.75·2^8 = 448 < 1.9·2^8): such values saturate. X is a power of two, so
// dividing by it is exact. An all-zero block gets X = 1.
int mx_shared_exponent(float amax, Format f);            // e, clamped to [-127, 127]
inline uint8_t e8m0_encode(int e) { return uint8_t(e + 127); }
inline float e8m0_decode(uint8_t code);                  // 2^(code − 127); NaN for 0xFF
std::vector<float> mx_scales(const Tensor& x, Format f);  // 1/X per 1×32 block (the multiplier)

// ---- a recipe, as a training run selects it ----------------------------------------------------
enum class Recipe { Current, Delayed, Block, Mx };
const char* recipe_name(Recipe r);  // "current" "delayed" "block" "mx"
// "current", "delayed", "block", "mx"; throws std::invalid_argument listing them otherwise.
Recipe parse_recipe(const std::string& name);

// What the FP8 Linear needs to know. hybrid: E4M3 forward (inputs, weights), E5M2 for the
// gradients, Transformer Engine's Format.HYBRID; otherwise E4M3 everywhere (Format.E4M3).
struct RecipeConfig {
  Recipe recipe = Recipe::Delayed;
  bool hybrid = true;
  int history_length = 16;  // delayed: amax history length
  int margin = 0;           // current, delayed: binades of headroom
};

// The three tensors of a Linear, as Transformer Engine names them.
enum class Role { Input, Weight, GradOutput };
const char* role_name(Role r);  // "x" "w" "dy"
Format role_format(const RecipeConfig& c, Role r);
// The tile of each role: per tensor (current, delayed), 1×128 / 128×128 (block), 1×32 (MX).
Tile role_tile(const RecipeConfig& c, Role r);

inline float e8m0_decode(uint8_t code) {
  if (code == 0xFF) return __builtin_nanf("");
  return float(FloatFormat::pow2(int(code) - 127));
}

}  // namespace hg::fp8
