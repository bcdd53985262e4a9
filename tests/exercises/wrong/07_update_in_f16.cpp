// A wrong answer: the update is added to the F16 weight, and the master copied from it.
// expect: Your master equals the F16 model
#include "lessons/07_master_weights/exercise.h"

void master_weight_step(std::vector<hg::half>& model, std::vector<float>& master, std::vector<float>& velocity,
                        const std::vector<hg::half>& grad, float lr, float momentum) {
  for (size_t i = 0; i < model.size(); ++i) {
    velocity[i] = momentum * velocity[i] + float(grad[i]);
    model[i] = hg::half(float(model[i]) - lr * velocity[i]);
    master[i] = float(model[i]);
  }
}
