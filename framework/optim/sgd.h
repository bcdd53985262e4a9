#pragma once
// SGD with momentum and weight decay, with PyTorch's semantics (torch.optim.SGD):
//
//   g = ∇p + weight_decay · p                      (L2 penalty folded into the gradient)
//   momentum:  b = g                 on the first step
//              b = μ · b + (1 − dampening) · g     afterwards
//              g = g + μ · b  (nesterov)  or  g = b
//   p = p − lr · g
//
// Note the first step: PyTorch starts the buffer at g, not at 0, so step 1 is a plain
// SGD step; a test pins this against PyTorch (tests/reference/nn).
#include "framework/optim/optimizer.h"

namespace hg::optim {

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, SGDOptions options);
  void step() override;
  std::string name() const override { return "sgd"; }
  const SGDOptions& options() const { return opt_; }

 protected:
  nlohmann::json hyperparameters() const override;

 private:
  SGDOptions opt_;
};

}  // namespace hg::optim
