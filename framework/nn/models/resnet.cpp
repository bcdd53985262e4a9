#include "framework/nn/models/resnet.h"

#include "framework/nn/init.h"
#include "framework/ops/ops.h"

namespace hg::nn {

namespace {

// A bias-free conv with torchvision's ResNet initialisation.
std::shared_ptr<Conv2d> resnet_conv(int64_t cin, int64_t cout, int64_t k, int64_t stride,
                                    Generator& gen) {
  auto conv = std::make_shared<Conv2d>(cin, cout, k, gen, stride, k / 2, /*bias=*/false);
  // Conv2d drew the nn.Conv2d default; torchvision then re-draws (as here). Assigning the
  // member replaces the registered parameter: the module holds a pointer to this member.
  conv->weight = init::kaiming_normal_fan_out({cout, cin, k, k}, cout * k * k, gen);
  conv->weight.requires_grad_(true);
  return conv;
}

std::shared_ptr<Sequential> make_downsample(int64_t cin, int64_t cout, int64_t stride,
                                            Generator& gen) {
  if (stride == 1 && cin == cout) return nullptr;
  auto seq = std::make_shared<Sequential>();
  seq->add(resnet_conv(cin, cout, 1, stride, gen));
  seq->add(std::make_shared<BatchNorm2d>(cout));
  return seq;
}

}  // namespace

BasicBlock::BasicBlock(int64_t cin, int64_t width, int64_t stride, Generator& gen) {
  conv1 = register_module("conv1", resnet_conv(cin, width, 3, stride, gen));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(width));
  conv2 = register_module("conv2", resnet_conv(width, width, 3, 1, gen));
  bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(width));
  downsample = make_downsample(cin, width * kExpansion, stride, gen);
  if (downsample) register_module("downsample", downsample);
}

Tensor BasicBlock::forward(const Tensor& x) {
  Tensor out = relu(bn1->forward(conv1->forward(x)));  // (N, width, H/s, W/s)
  out = bn2->forward(conv2->forward(out));              // (N, width, H/s, W/s)
  Tensor identity = downsample ? downsample->forward(x) : x;
  return relu(add(out, identity));
}

Bottleneck::Bottleneck(int64_t cin, int64_t width, int64_t stride, Generator& gen) {
  conv1 = register_module("conv1", resnet_conv(cin, width, 1, 1, gen));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(width));
  conv2 = register_module("conv2", resnet_conv(width, width, 3, stride, gen));
  bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(width));
  conv3 = register_module("conv3", resnet_conv(width, width * kExpansion, 1, 1, gen));
  bn3 = register_module("bn3", std::make_shared<BatchNorm2d>(width * kExpansion));
  downsample = make_downsample(cin, width * kExpansion, stride, gen);
  if (downsample) register_module("downsample", downsample);
}

Tensor Bottleneck::forward(const Tensor& x) {
  Tensor out = relu(bn1->forward(conv1->forward(x)));  // (N, width, H, W)
  out = relu(bn2->forward(conv2->forward(out)));        // (N, width, H/s, W/s)
  out = bn3->forward(conv3->forward(out));              // (N, 4·width, H/s, W/s)
  Tensor identity = downsample ? downsample->forward(x) : x;
  return relu(add(out, identity));
}

ResNet::ResNet(Block block, std::vector<int> blocks, Generator& gen, int64_t cin, int64_t classes,
               int64_t w)
    : block_(block), blocks_(blocks) {
  const int64_t expansion = block == Block::Basic ? BasicBlock::kExpansion : Bottleneck::kExpansion;
  conv1 = register_module("conv1", resnet_conv(cin, w, 3, 1, gen));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(w));
  int64_t channels = w;  // channels entering the next block
  auto make_layer = [&](int64_t width, int count, int64_t stride) {
    auto layer = std::make_shared<Sequential>();
    for (int i = 0; i < count; ++i) {
      const int64_t s = i == 0 ? stride : 1;
      if (block == Block::Basic) layer->add(std::make_shared<BasicBlock>(channels, width, s, gen));
      else layer->add(std::make_shared<Bottleneck>(channels, width, s, gen));
      channels = width * expansion;
    }
    return layer;
  };
  layer1 = register_module("layer1", make_layer(w, blocks.at(0), 1));
  layer2 = register_module("layer2", make_layer(2 * w, blocks.at(1), 2));
  layer3 = register_module("layer3", make_layer(4 * w, blocks.at(2), 2));
  layer4 = register_module("layer4", make_layer(8 * w, blocks.at(3), 2));
  fc = register_module("fc", std::make_shared<Linear>(channels, classes, gen));
}

Tensor ResNet::forward(const Tensor& x) {
  Tensor h = relu(bn1->forward(conv1->forward(x)));  // (N, w, H, W)
  h = layer1->forward(h);                             // (N, w·e, H, W)
  h = layer2->forward(h);                             // (N, 2w·e, H/2, W/2)
  h = layer3->forward(h);                             // (N, 4w·e, H/4, W/4)
  h = layer4->forward(h);                             // (N, 8w·e, H/8, W/8)
  h = global_avg_pool2d(h);                           // (N, 8w·e)
  return fc->forward(h);                              // (N, classes)
}

std::string ResNet::describe() const {
  std::string s = block_ == Block::Basic ? "ResNet(BasicBlock" : "ResNet(Bottleneck";
  s += " x [";
  for (size_t i = 0; i < blocks_.size(); ++i) s += (i ? ", " : "") + std::to_string(blocks_[i]);
  return s + "])";
}

std::shared_ptr<ResNet> resnet18(Generator& gen, int64_t cin, int64_t classes, int64_t w) {
  return std::make_shared<ResNet>(ResNet::Block::Basic, std::vector<int>{2, 2, 2, 2}, gen, cin,
                                  classes, w);
}

std::shared_ptr<ResNet> resnet50(Generator& gen, int64_t cin, int64_t classes, int64_t w) {
  return std::make_shared<ResNet>(ResNet::Block::Bottleneck, std::vector<int>{3, 4, 6, 3}, gen,
                                  cin, classes, w);
}

}  // namespace hg::nn
