#include "framework/nn/models/small_cnn.h"

#include "framework/ops/ops.h"

namespace hg::nn {

SmallCNN::SmallCNN(Generator& gen, int64_t cin, int64_t c1, int64_t c2, int64_t hidden,
                   int64_t classes, int64_t s) {
  conv1 = register_module("conv1", std::make_shared<Conv2d>(cin, c1, 3, gen, 1, 1));
  conv2 = register_module("conv2", std::make_shared<Conv2d>(c1, c2, 3, gen, 1, 1));
  fc1 = register_module("fc1", std::make_shared<Linear>(c2 * (s / 4) * (s / 4), hidden, gen));
  fc2 = register_module("fc2", std::make_shared<Linear>(hidden, classes, gen));
}

Tensor SmallCNN::forward(const Tensor& x) {
  Tensor h = max_pool2d(relu(conv1->forward(x)), 2, 2);  // (N, c1, S/2, S/2)
  h = max_pool2d(relu(conv2->forward(h)), 2, 2);         // (N, c2, S/4, S/4)
  h = h.reshape({h.size(0), h.numel() / h.size(0)});     // (N, c2·S/4·S/4)
  h = relu(fc1->forward(h));                              // (N, hidden)
  return fc2->forward(h);                                 // (N, classes)
}

}  // namespace hg::nn
