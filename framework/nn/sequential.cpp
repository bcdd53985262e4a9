#include "framework/nn/sequential.h"

namespace hg::nn {

Sequential::Sequential(std::initializer_list<ModulePtr> modules) {
  for (const auto& m : modules) add(m);
}

Sequential& Sequential::add(ModulePtr m) {
  register_module(std::to_string(children().size()), std::move(m));
  return *this;
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (const auto& [name, child] : children()) h = child->forward(h);
  return h;
}

}  // namespace hg::nn
