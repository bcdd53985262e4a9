#include "framework/fp8/mlp.h"

#include "framework/ops/ops.h"

namespace hg::fp8 {

Fp8Mlp::Fp8Mlp(Generator& gen, const RecipeConfig& r, Accumulator acc, int64_t in, int64_t h1, int64_t h2,
               int64_t classes) {
  fc1 = register_module("fc1", std::make_shared<Fp8Linear>(in, h1, gen, r, "fc1", acc));
  fc2 = register_module("fc2", std::make_shared<Fp8Linear>(h1, h2, gen, r, "fc2", acc));
  fc3 = register_module("fc3", std::make_shared<Fp8Linear>(h2, classes, gen, r, "fc3", acc));
}

Tensor Fp8Mlp::forward(const Tensor& x) {
  Tensor h = x.reshape({x.size(0), x.numel() / x.size(0)});  // (N, in)
  h = relu(fc1->forward(h));                                 // (N, hidden1)
  h = relu(fc2->forward(h));                                 // (N, hidden2)
  return fc3->forward(h);                                    // (N, classes)
}

std::vector<ScaleRecord> Fp8Mlp::records() const {
  std::vector<ScaleRecord> all;
  for (const auto& layer : {fc1, fc2, fc3}) {
    const std::vector<ScaleRecord> r = layer->records();
    all.insert(all.end(), r.begin(), r.end());
  }
  return all;
}

}  // namespace hg::fp8
