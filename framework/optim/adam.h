#pragma once
// Adam and AdamW, with PyTorch's semantics (torch.optim.Adam / AdamW, amsgrad off).
//
//   t = t + 1
//   Adam:   g = ∇p + weight_decay · p           (L2 penalty inside the gradient)
//   AdamW:  p = p · (1 − lr · weight_decay)      (decoupled decay), g = ∇p
//   m = β1 · m + (1 − β1) · g                    first moment  (state "exp_avg")
//   v = β2 · v + (1 − β2) · g²                   second moment (state "exp_avg_sq")
//   p = p − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + eps)
//
// The bias corrections (1 − βᵗ) undo the zero start of m and v; without them the first
// steps would be far too small.
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

 protected:
  nlohmann::json hyperparameters() const override;

 private:
  AdamOptions opt_;
  bool decoupled_;
};

// AdamW: Adam with decoupled weight decay (Loshchilov & Hutter). PyTorch's default
// weight_decay for AdamW is 0.01.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, AdamOptions options) : Adam(std::move(params), options, true) {}
};

}  // namespace hg::optim
