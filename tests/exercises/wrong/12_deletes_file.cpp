// A cheat: it deletes a file (here the learner's exercise.cpp, by a path that does not exist
// where the tests run). The sandbox stops the call before it reaches any file.
// expect: tried to delete a file
#include <cstdio>

#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig&) {
  std::remove("lessons/12_memory_and_scale/exercise.cpp");
  return 0;
}

ModelStates student_model_states(int64_t, hg::memory::OptimizerKind, hg::memory::Precision) { return {}; }

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig&, int64_t) { return {}; }
