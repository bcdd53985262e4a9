// A wrong answer: halfgrad's SGD updates tensors made from the master copies.
// expect: exercise\.cpp calls hg::optim::SGD::
#include "framework/optim/sgd.h"
#include "lessons/07_master_weights/exercise.h"

void master_weight_step(std::vector<hg::half>& model, std::vector<float>& master, std::vector<float>& velocity,
                        const std::vector<hg::half>& grad, float lr, float momentum) {
  const int64_t n = int64_t(master.size());
  hg::Tensor w = hg::Tensor::from_vector(master, {n});
  std::vector<float> g(master.size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = float(grad[i]) + momentum * velocity[i];
  w.requires_grad_(true);
  w.set_grad(hg::Tensor::from_vector(g, {n}));
  hg::optim::SGD sgd({w}, {.lr = lr});
  sgd.step();
  master = w.to_vector();
  for (size_t i = 0; i < master.size(); ++i) velocity[i] = g[i], model[i] = hg::half(master[i]);
}
