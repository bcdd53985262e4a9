// A cheat: the parameter count from the GPT's own memory estimate (gpt.h's gpt_memory), the
// bytes written out honestly.
// expect: exercise\.cpp calls hg::nn::gpt_memory, the GPT's own parameter count
#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig& config) { return hg::nn::gpt_memory(config).parameters; }

ModelStates student_model_states(int64_t params, hg::memory::OptimizerKind optimizer,
                                 hg::memory::Precision precision) {
  using hg::memory::OptimizerKind;
  const int64_t moments = optimizer == OptimizerKind::SGD ? 0 : optimizer == OptimizerKind::SGDMomentum ? 4 : 8;
  if (precision == hg::memory::Precision::FP32) return {4 * params, 4 * params, moments * params};
  return {2 * params, 6 * params, (4 + moments) * params};
}

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig&, int64_t) { return {}; }
