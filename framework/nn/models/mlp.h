#pragma once
// MLP: the first model of chapter 02.
//   x (N, 1, 28, 28) -> flatten (N, 784) -> fc1 (N, 512) -> ReLU -> fc2 (N, 256) -> ReLU
//   -> fc3 (N, 10) logits
// 784·512 + 512 + 512·256 + 256 + 256·10 + 10 = 535,818 parameters.
// The sizes are arguments so the tests can build a small one (tests/reference/nn).
#include "framework/nn/layers.h"
#include "framework/nn/linear.h"

namespace hg::nn {

class MLP : public Module {
 public:
  MLP(Generator& gen, int64_t in = 784, int64_t hidden1 = 512, int64_t hidden2 = 256,
      int64_t classes = 10);
  Tensor forward(const Tensor& x) override;  // (N, C, H, W) or (N, in) -> (N, classes)
  std::string describe() const override { return "MLP"; }

  std::shared_ptr<Linear> fc1, fc2, fc3;
};

}  // namespace hg::nn
