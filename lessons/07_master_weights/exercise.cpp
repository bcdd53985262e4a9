// Chapter 07 exercise — the master-weight step (see exercise.h).
//
// Chapter 06 lost the updates that were smaller than half an F16 ULP of the weight,
// because it added them in F16. This chapter's fix: decide where each number lives and
// where each addition happens, so that small steps add up somewhere they are not rounded
// away, and the F16 model still sees the result ("## Exercise" in README.md has the
// picture). Think about:
//   - in which precision the update lr·v is computed and added,
//   - which copy is the truth that the next step starts from, and which is derived from it,
//   - when the F16 model is brought up to date.
// float(h) widens an hg::half exactly; hg::half(x) rounds a float to the nearest F16.
// Run: ./lab check 07
#include "lessons/07_master_weights/exercise.h"

void master_weight_step(std::vector<hg::half>& model, std::vector<float>& master, std::vector<float>& velocity,
                        const std::vector<hg::half>& grad, float lr, float momentum) {
  // TODO: the step. As shipped nothing moves.
}
