// A wrong answer: attention's products counted for sequences of block_size tokens, whatever
// the sequence's length.
// expect: That is their cost at block_size = [0-9]+: the products are as long as the sequence
#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig&) { return 0; }

ModelStates student_model_states(int64_t, hg::memory::OptimizerKind, hg::memory::Precision) { return {}; }

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig& config, int64_t) {
  const int64_t L = config.n_layer, C = config.n_embd, V = config.vocab_size, T = config.block_size;
  FlopsPerToken f;
  f.weights_forward = L * 2 * 12 * C * C + 2 * C * V;
  f.attention_forward = L * 2 * 2 * T * C;
  f.training_step = 3 * (f.weights_forward + f.attention_forward);
  return f;
}
