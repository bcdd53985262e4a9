#pragma once
// FP8 Linear: y = x · Wᵀ + b with the forward GEMM and both backward GEMMs in FP8.
//
//   forward   y  (N, out) = x  (N, in)  · Wᵀ          A = x   (N, K=in)    B = W   (out, in)
//   dgrad     dx (N, in)  = dy (N, out) · W           A = dy  (N, K=out)   B = Wᵀ  (in, out)
//   wgrad     dW (out,in) = dyᵀ (out, N) · x          A = dyᵀ (out, K=N)   B = xᵀ  (in, N)
//   db        (out)       = Σ_n dy                    in F32
//
// Every GEMM is the emulated FP8 tensor core (fp8_gemm.h), TN: each operand is quantized
// along its own K, so the backward quantizes the transposes it needs (Wᵀ, dyᵀ, xᵀ). With a
// per-tensor recipe a transpose reuses the forward's scale (the same codes, transposed);
// with block or MX scaling its tiles run along the new K and are computed afresh, as
// DeepSeek-V3 does for its wgrad.
//
// Master weights and the optimizer stay F32: the layer's weight is an ordinary F32
// parameter, quantized again at every forward. The output and the gradients are F32 (the
// layer rounds its output to the autocast dtype inside an autocast region).
//
// The three tensors x, w, dy each have a Scaler: the recipe's state (the amax history for
// delayed scaling) and what the last cast did (ScaleRecord, for the run log's fp8_scale
// event, docs/run-log.md). Delayed scaling updates the histories of x and w only when the
// forward records gradients (training), so evaluation does not move the scales; dy's history
// grows at every backward pass (which itself runs with recording off).
#include <memory>
#include <string>
#include <vector>

#include "framework/fp8/fp8_gemm.h"
#include "framework/fp8/scaling.h"
#include "framework/io/run_log.h"
#include "framework/nn/linear.h"

namespace hg::fp8 {

// What one cast did, for the run log.
struct ScaleRecord {
  std::string tensor;       // "fc1.x", "fc1.w", "fc1.dy"
  Format format = Format::E4M3;
  float amax = 0;           // of the whole tensor, this step
  float scale = 1;          // per-tensor recipes: the scale; tiled ones: the smallest tile scale
  float scale_max = 1;      // tiled recipes: the largest tile scale (= scale when per tensor)
  float history_amax = 0;   // delayed: max over the history after this step's update
  CastStats stats;
};

class Scaler {
 public:
  Scaler(const RecipeConfig& recipe, Role role, std::string name);
  // Quantize x (R, C) along C with this role's format and tiles; remember what happened.
  // update_history: delayed scaling records this amax (training steps only).
  Fp8Tensor quantize(const Tensor& x, bool update_history);
  // xt, the transpose of a tensor quantized by quantize() as `forward`, for a backward GEMM.
  Fp8Tensor quantize_transposed(const Tensor& xt, const Fp8Tensor& forward) const;
  const ScaleRecord& last() const { return last_; }

 private:
  std::vector<float> scales_for(const Tensor& x, Tile tile);
  RecipeConfig recipe_;
  Role role_;
  DelayedScaling delayed_;
  ScaleRecord last_;
};

struct LinearScalers {
  LinearScalers(const RecipeConfig& recipe, const std::string& layer, Accumulator acc = {});
  Scaler x, w, dy;
  Accumulator acc;
};

// The op: x (N, in) F32, w (out, in) F32, b (out) F32 or undefined -> (N, out) F32.
Tensor fp8_linear(const Tensor& x, const Tensor& w, const Tensor& b, const std::shared_ptr<LinearScalers>& s);

// nn::Linear with FP8 GEMMs: the same parameters, initialised the same way (so a model built
// from it with the same seed starts from the same weights as one built from nn::Linear).
class Fp8Linear : public nn::Linear {
 public:
  Fp8Linear(int64_t in, int64_t out, Generator& gen, const RecipeConfig& recipe, const std::string& name,
            Accumulator acc = {});
  Tensor forward(const Tensor& x) override;  // (N, in) -> (N, out); (..., in) -> (..., out)
  std::string describe() const override;
  // x, w and dy of the last step (dy after the backward pass)
  std::vector<ScaleRecord> records() const { return {scalers->x.last(), scalers->w.last(), scalers->dy.last()}; }

  RecipeConfig recipe;
  std::shared_ptr<LinearScalers> scalers;
};

// One fp8_scale event (docs/run-log.md) per record.
void log_fp8_scales(io::RunLog& log, int64_t step, const std::vector<ScaleRecord>& records);
nlohmann::json fp8_scale_fields(const ScaleRecord& r);

}  // namespace hg::fp8
