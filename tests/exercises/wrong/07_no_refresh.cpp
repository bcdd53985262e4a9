// A wrong answer: the master is updated, the F16 model is never refreshed from it.
// expect: not the master rounded to F16
#include "lessons/07_master_weights/exercise.h"

void master_weight_step(std::vector<hg::half>& model, std::vector<float>& master, std::vector<float>& velocity,
                        const std::vector<hg::half>& grad, float lr, float momentum) {
  for (size_t i = 0; i < master.size(); ++i) {
    velocity[i] = momentum * velocity[i] + float(grad[i]);
    master[i] = master[i] - lr * velocity[i];
  }
}
