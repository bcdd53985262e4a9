// A cheat: the parameter counts one grading (--seed 1) asked for in its first check, replayed
// in the order it asked them. The next grading draws other sizes, and asks the hand-picked
// ones in another order, so the replay fails at once.
// expect: \[WRONG\] the parameter count of a tied GPT .*you count [0-9]+ parameters
#include "lessons/12_memory_and_scale/exercise.h"

namespace {
int calls = 0;  // a static local would need a guard variable; a namespace-scope int is plain data
}

int64_t student_gpt_parameters(const hg::nn::GPTConfig&) {
  static const int64_t answers[] = {984, 10980, 39616, 2224, 6896, 2460, 30432};
  return answers[calls++ % 7];
}

ModelStates student_model_states(int64_t, hg::memory::OptimizerKind, hg::memory::Precision) { return {}; }

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig&, int64_t) { return {}; }
