// A wrong answer: the LM head counted even when it is tied to wte.
// expect: with a tied head the logits are computed with wte.s own weight
#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig& config) {
  const int64_t L = config.n_layer, C = config.n_embd, T = config.block_size, V = config.vocab_size;
  // One block: ln_1 and ln_2 (2C each), c_attn C -> 3C (3C² + 3C), attn.c_proj C -> C
  // (C² + C), mlp.c_fc C -> 4C (4C² + 4C), mlp.c_proj 4C -> C (4C² + C): 12C² + 13C.
  const int64_t block = 12 * C * C + 13 * C;
  // wte (V, C), wpe (T, C), the final layer norm 2C; an untied head is one more (V, C).
  return L * block + V * C + T * C + 2 * C + V * C;
}

ModelStates student_model_states(int64_t params, hg::memory::OptimizerKind optimizer,
                                 hg::memory::Precision precision) {
  using hg::memory::OptimizerKind;
  // F32 bytes the optimizer keeps per parameter: a momentum buffer, or Adam's m and v.
  const int64_t moments = optimizer == OptimizerKind::SGD ? 0 : optimizer == OptimizerKind::SGDMomentum ? 4 : 8;
  ModelStates s;
  if (precision == hg::memory::Precision::FP32) {
    s.parameters = 4 * params;
    s.gradients = 4 * params;
    s.optimizer_state = moments * params;
  } else {
    // F16 weights and gradients; the F32 master copy is optimizer state, and its F32
    // gradient (what the optimizer reads) is a gradient: 2 + (2 + 4) + (4 + moments).
    s.parameters = 2 * params;
    s.gradients = (2 + 4) * params;
    s.optimizer_state = (4 + moments) * params;
  }
  return s;
}

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig&, int64_t) { return {}; }
