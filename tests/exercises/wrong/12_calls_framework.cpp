// A wrong answer: the framework's own answers (the model's count, the formulas).
// expect: exercise\.cpp calls hg::nn::Module::
#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig& config) {
  hg::Generator gen(0);
  return hg::nn::GPT(config, gen).num_parameters();
}

ModelStates student_model_states(int64_t params, hg::memory::OptimizerKind optimizer,
                                 hg::memory::Precision precision) {
  const hg::memory::BytesPerParam b = hg::memory::bytes_per_param(optimizer, precision);
  return {b.parameters * params, b.gradients * params, b.optimizer_state * params};
}

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig&, int64_t) { return {}; }
