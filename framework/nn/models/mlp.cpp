#include "framework/nn/models/mlp.h"

#include "framework/ops/ops.h"

namespace hg::nn {

MLP::MLP(Generator& gen, int64_t in, int64_t h1, int64_t h2, int64_t classes) {
  fc1 = register_module("fc1", std::make_shared<Linear>(in, h1, gen));
  fc2 = register_module("fc2", std::make_shared<Linear>(h1, h2, gen));
  fc3 = register_module("fc3", std::make_shared<Linear>(h2, classes, gen));
}

Tensor MLP::forward(const Tensor& x) {
  Tensor h = x.reshape({x.size(0), x.numel() / x.size(0)});  // (N, in)
  h = relu(fc1->forward(h));                                 // (N, hidden1)
  h = relu(fc2->forward(h));                                 // (N, hidden2)
  return fc3->forward(h);                                    // (N, classes)
}

}  // namespace hg::nn
