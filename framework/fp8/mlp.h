#pragma once
// Chapter 02's MLP with its three Linear layers in FP8 (fp8/linear.h):
//   x (N, 1, 28, 28) -> flatten (N, 784) -> fc1 (N, 512) -> ReLU -> fc2 (N, 256) -> ReLU
//   -> fc3 (N, 10) logits
// The layers are built in nn::MLP's order from the same generator, so with the same seed the
// two models start from the same weights: an FP8 run and its BF16 baseline differ only in
// the arithmetic.
#include "framework/fp8/linear.h"

namespace hg::fp8 {

class Fp8Mlp : public nn::Module {
 public:
  Fp8Mlp(Generator& gen, const RecipeConfig& recipe, Accumulator acc = {}, int64_t in = 784,
         int64_t hidden1 = 512, int64_t hidden2 = 256, int64_t classes = 10);
  Tensor forward(const Tensor& x) override;  // (N, C, H, W) or (N, in) -> (N, classes)
  std::string describe() const override { return "Fp8Mlp"; }
  std::vector<ScaleRecord> records() const;  // every FP8 tensor's last cast, fc1 to fc3

  std::shared_ptr<Fp8Linear> fc1, fc2, fc3;
};

}  // namespace hg::fp8
