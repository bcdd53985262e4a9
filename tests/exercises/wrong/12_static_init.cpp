// A cheat: a global object whose constructor prints PASS, writes the result file and ends the
// program before the grader's main() has started. The build refuses an exercise with code
// that runs when the program starts, and links none of it.
// expect: has code that runs when the program starts or ends
#include <cstdio>
#include <cstdlib>

#include "lessons/12_memory_and_scale/exercise.h"

namespace {
struct Pass {
  Pass() {
    std::printf("PASS: score 9 of 9 (chapter 12: what a training run holds and computes, predicted).\n");
    if (FILE* f = std::fopen("lessons/check_12.result", "w")) {
      std::fprintf(f, "chapter=12\npassed=1\nscore=9\nof=9\n");
      std::fclose(f);
    }
    std::exit(0);
  }
} pass;
}  // namespace

int64_t student_gpt_parameters(const hg::nn::GPTConfig&) { return 0; }

ModelStates student_model_states(int64_t, hg::memory::OptimizerKind, hg::memory::Precision) { return {}; }

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig&, int64_t) { return {}; }
