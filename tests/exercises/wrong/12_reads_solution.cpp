// A cheat: it opens the reference solution to read its formula out of it. The sandbox stops
// the open.
// expect: tried to open a file
#include <fstream>
#include <string>

#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig&) {
  std::ifstream in("lessons/12_memory_and_scale/solution/exercise.cpp");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return int64_t(text.size());
}

ModelStates student_model_states(int64_t, hg::memory::OptimizerKind, hg::memory::Precision) { return {}; }

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig&, int64_t) { return {}; }
