// A cheat: it prints the grader's PASS line, writes the result file ./lab check reads with a
// score of its own (9 of 9), and ends the program. The sandbox stops the file from being
// opened, and the verdict and the score are the grader's.
// expect: tried to open a file .* Not yet: score 0 of 9
#include <cstdio>
#include <cstdlib>

#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig&) {
  std::printf("PASS: score 9 of 9 (chapter 12: what a training run holds and computes, predicted).\n");
  if (FILE* f = std::fopen("lessons/check_12.result", "w")) {
    std::fprintf(f, "chapter=12\npassed=1\nscore=9\nof=9\n");
    std::fclose(f);
  }
  std::exit(0);
}

ModelStates student_model_states(int64_t, hg::memory::OptimizerKind, hg::memory::Precision) { return {}; }

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig&, int64_t) { return {}; }
