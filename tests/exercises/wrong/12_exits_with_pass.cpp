// A cheat: it prints the grader's PASS line and ends the program with exit code 0 before any
// comparison. The grader's verdict does not depend on how the learner's process ends.
// expect: ended the whole program \(exit code 0\) .* Not yet: score 0 of 9
#include <cstdio>
#include <cstdlib>

#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig&) {
  std::printf("PASS: score 9 of 9 (chapter 12: what a training run holds and computes, predicted).\n");
  std::exit(0);
}

ModelStates student_model_states(int64_t, hg::memory::OptimizerKind, hg::memory::Precision) { return {}; }

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig&, int64_t) { return {}; }
