#pragma once
// ResNet-18 and ResNet-50 (torchvision's layout and parameter names), adapted to 28×28×1
// images the way CIFAR-style ResNets are: a 3×3 stride-1 stem and no max-pool, so the
// feature maps are 28 -> 28 (layer1) -> 14 (layer2) -> 7 (layer3) -> 4 (layer4).
//
//   stem:   conv1 3×3 (1 -> 64), bn1, ReLU                       (N, 64, 28, 28)
//   layer1: blocks at width 64,  stride 1                        (N, 64·e, 28, 28)
//   layer2: blocks at width 128, first block stride 2            (N, 128·e, 14, 14)
//   layer3: blocks at width 256, first block stride 2            (N, 256·e, 7, 7)
//   layer4: blocks at width 512, first block stride 2            (N, 512·e, 4, 4)
//   head:   global average pool (N, 512·e), fc (N, classes)
// e (expansion) = 1 for BasicBlock, 4 for Bottleneck.
// ResNet-18: BasicBlock × [2, 2, 2, 2], 11.2 M parameters.
// ResNet-50: Bottleneck × [3, 4, 6, 3], 23.5 M parameters.
//
// A block adds its input back ("identity") to its output; when the shape changes (stride 2
// or more channels) the identity goes through `downsample` = 1×1 conv (stride s) + BN.
// Initialisation follows torchvision: convs kaiming_normal(fan_out), BN γ=1 β=0, fc the
// nn.Linear default.
#include <vector>

#include "framework/nn/batch_norm.h"
#include "framework/nn/conv2d.h"
#include "framework/nn/layers.h"
#include "framework/nn/linear.h"
#include "framework/nn/sequential.h"

namespace hg::nn {

// relu(bn2(conv2(relu(bn1(conv1(x))))) + identity), two 3×3 convs.
class BasicBlock : public Module {
 public:
  static constexpr int64_t kExpansion = 1;
  BasicBlock(int64_t in_channels, int64_t width, int64_t stride, Generator& gen);
  Tensor forward(const Tensor& x) override;  // (N, Cin, H, W) -> (N, width, H/s, W/s)
  std::string describe() const override { return "BasicBlock"; }

  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<BatchNorm2d> bn1, bn2;
  std::shared_ptr<Sequential> downsample;  // null when the identity fits as it is
};

// 1×1 (reduce to width) -> 3×3 (stride s) -> 1×1 (expand to 4·width), each with BN;
// the stride sits on the 3×3 conv (torchvision's "ResNet v1.5").
class Bottleneck : public Module {
 public:
  static constexpr int64_t kExpansion = 4;
  Bottleneck(int64_t in_channels, int64_t width, int64_t stride, Generator& gen);
  Tensor forward(const Tensor& x) override;  // (N, Cin, H, W) -> (N, 4·width, H/s, W/s)
  std::string describe() const override { return "Bottleneck"; }

  std::shared_ptr<Conv2d> conv1, conv2, conv3;
  std::shared_ptr<BatchNorm2d> bn1, bn2, bn3;
  std::shared_ptr<Sequential> downsample;
};

class ResNet : public Module {
 public:
  enum class Block { Basic, Bottleneck };
  // base_width 64 is the real network; the tests use a narrow one to stay fast.
  ResNet(Block block, std::vector<int> blocks_per_layer, Generator& gen, int64_t in_channels = 1,
         int64_t classes = 10, int64_t base_width = 64);
  Tensor forward(const Tensor& x) override;  // (N, Cin, H, W) -> (N, classes)
  std::string describe() const override;

  std::shared_ptr<Conv2d> conv1;
  std::shared_ptr<BatchNorm2d> bn1;
  std::shared_ptr<Sequential> layer1, layer2, layer3, layer4;
  std::shared_ptr<Linear> fc;

 private:
  Block block_;
  std::vector<int> blocks_;
};

std::shared_ptr<ResNet> resnet18(Generator& gen, int64_t in_channels = 1, int64_t classes = 10,
                                 int64_t base_width = 64);
std::shared_ptr<ResNet> resnet50(Generator& gen, int64_t in_channels = 1, int64_t classes = 10,
                                 int64_t base_width = 64);

}  // namespace hg::nn
