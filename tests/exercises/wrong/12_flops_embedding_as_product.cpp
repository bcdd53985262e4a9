// A wrong answer: the token embedding counted as a product beside the LM head, so a tied
// head's weight is counted twice; the rest right.
// expect: That is the token embedding wte \(V.C\): it is looked up, a row copied per token; with a tied head
#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig&) { return 0; }

ModelStates student_model_states(int64_t, hg::memory::OptimizerKind, hg::memory::Precision) { return {}; }

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig& config, int64_t T) {
  const int64_t L = config.n_layer, C = config.n_embd, V = config.vocab_size;
  FlopsPerToken f;
  f.weights_forward = L * 2 * 12 * C * C + 2 * C * V + 2 * V * C;  // wte, then the head
  f.attention_forward = L * 2 * 2 * T * C;
  f.training_step = 3 * (f.weights_forward + f.attention_forward);
  return f;
}
