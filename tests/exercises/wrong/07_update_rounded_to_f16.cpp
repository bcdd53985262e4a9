// A wrong answer: the update lr·v is formed in F16 before it reaches the F32 master.
// expect: rounded to F16 before it was added
#include "lessons/07_master_weights/exercise.h"

void master_weight_step(std::vector<hg::half>& model, std::vector<float>& master, std::vector<float>& velocity,
                        const std::vector<hg::half>& grad, float lr, float momentum) {
  for (size_t i = 0; i < master.size(); ++i) {
    velocity[i] = momentum * velocity[i] + float(grad[i]);
    master[i] = master[i] - float(hg::half(lr * velocity[i]));
    model[i] = hg::half(master[i]);
  }
}
