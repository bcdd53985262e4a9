#pragma once
// SmallCNN: the second model of chapter 02. 3×3 convolutions with padding 1 keep the size;
// each 2×2 max-pool halves it.
//   x (N, 1, 28, 28) -> conv1 (N, 32, 28, 28) -> ReLU -> pool (N, 32, 14, 14)
//   -> conv2 (N, 64, 14, 14) -> ReLU -> pool (N, 64, 7, 7) -> flatten (N, 3136)
//   -> fc1 (N, 128) -> ReLU -> fc2 (N, 10) logits
// 320 + 18,496 + 401,536 + 1,290 = 421,642 parameters.
// The sizes are arguments so the tests can build a small one (tests/reference/nn).
#include "framework/nn/conv2d.h"
#include "framework/nn/linear.h"

namespace hg::nn {

class SmallCNN : public Module {
 public:
  SmallCNN(Generator& gen, int64_t in_channels = 1, int64_t channels1 = 32,
           int64_t channels2 = 64, int64_t hidden = 128, int64_t classes = 10,
           int64_t image_size = 28);
  Tensor forward(const Tensor& x) override;  // (N, Cin, S, S) -> (N, classes)
  std::string describe() const override { return "SmallCNN"; }

  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<Linear> fc1, fc2;
};

}  // namespace hg::nn
