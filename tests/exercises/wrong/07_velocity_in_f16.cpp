// A wrong answer: everything in F32 except the momentum buffer, rounded to F16 each step.
// expect: The velocity was rounded to F16
#include "lessons/07_master_weights/exercise.h"

void master_weight_step(std::vector<hg::half>& model, std::vector<float>& master, std::vector<float>& velocity,
                        const std::vector<hg::half>& grad, float lr, float momentum) {
  for (size_t i = 0; i < master.size(); ++i) {
    velocity[i] = float(hg::half(momentum * velocity[i] + float(grad[i])));
    master[i] = master[i] - lr * velocity[i];
    model[i] = hg::half(master[i]);
  }
}
