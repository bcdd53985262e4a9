// Chapter 07 exercise — the reference solution.
//
//   g  = F32(grad)              exact: every F16 value is an F32 value
//   v  = momentum·v + g         F32, the optimizer's state
//   W  = W − lr·v               F32: the master copy is the truth; small steps add up here
//   w  = F16(W)                 the model is refreshed from the master, rounded once
// The master is never read back from the F16 model: that would round away exactly the
// small steps it exists to keep.
#include "lessons/07_master_weights/exercise.h"

void master_weight_step(std::vector<hg::half>& model, std::vector<float>& master, std::vector<float>& velocity,
                        const std::vector<hg::half>& grad, float lr, float momentum) {
  for (size_t i = 0; i < master.size(); ++i) {
    const float g = float(grad[i]);
    velocity[i] = momentum * velocity[i] + g;
    master[i] = master[i] - lr * velocity[i];
    model[i] = hg::half(master[i]);
  }
}
