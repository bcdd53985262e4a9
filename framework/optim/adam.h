#pragma once
// Adam and AdamW, with PyTorch's semantics (torch.optim.Adam / AdamW, amsgrad off).
//
//   t = t + 1                                    this parameter's step count (state "step")
//   Adam:   g = ∇p + weight_decay · p           (L2 penalty inside the gradient)
//   AdamW:  p = p · (1 − lr · weight_decay)      (decoupled decay), g = ∇p
//   m = β1 · m + (1 − β1) · g                    first moment  (state "exp_avg")
//   v = β2 · v + (1 − β2) · g²                   second moment (state "exp_avg_sq")
//   p = p − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + eps)
//
// The bias corrections (1 − βᵗ) undo the zero start of m and v; without them the first
// steps would be far too small.
//
// t counts per parameter, as PyTorch's state['step']: a parameter without a .grad is
// skipped by step() and its t does not move. So a parameter whose first gradient arrives
// at step 3 (a layer frozen for two steps, an embedding row no batch used) takes a first
// step with t = 1: m̂ = g, v̂ = g², and it moves by lr · g/(|g| + eps) ≈ lr. One count shared
// by all parameters would correct its fresh moments with t = 3 (1 − 0.9³ = 0.271 instead of
// 0.1) and move it by 0.64 · lr.
#include <vector>

#include "framework/optim/optimizer.h"

namespace hg::optim {

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, AdamOptions options, bool decoupled_weight_decay = false);
  void step() override;
  std::string name() const override { return decoupled_ ? "adamw" : "adam"; }
  const AdamOptions& options() const { return opt_; }
  // t of parameter i: the number of steps that updated it.
  int64_t param_step(size_t i) const { return param_steps_.at(i); }

  // The optimizer's state plus meta "param_steps": [t of each parameter].
  OptimizerState state_dict() const override;
  // A state without "param_steps" (written when t was one global count) loads with t =
  // the global "steps" for each parameter that has moments (it had gradients) and 0 for one
  // without: exactly the per-parameter counts when every parameter had a gradient on every
  // step, as in every training loop of this course.
  void load_state_dict(const OptimizerState& state) override;

 protected:
  nlohmann::json hyperparameters() const override;

 private:
  AdamOptions opt_;
  bool decoupled_;
  std::vector<int64_t> param_steps_;  // t per parameter (PyTorch's state['step'])
};

// AdamW: Adam with decoupled weight decay (Loshchilov & Hutter). PyTorch's default
// weight_decay for AdamW is 0.01.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, true) {}
};

}  // namespace hg::optim
