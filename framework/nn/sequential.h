#pragma once
// Sequential: children applied in order; they are named "0", "1", ... as in PyTorch
// (so a ResNet's downsample path is "layer2.0.downsample.0.weight").
#include <initializer_list>

#include "framework/nn/module.h"

namespace hg::nn {

class Sequential : public Module {
 public:
  Sequential() = default;
  explicit Sequential(std::initializer_list<ModulePtr> modules);
  Sequential& add(ModulePtr m);  // appends under the next index
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "Sequential"; }
  size_t size() const { return children().size(); }
  Module& operator[](size_t i) const { return *children().at(i).second; }  // the i-th, from 0
};

}  // namespace hg::nn
