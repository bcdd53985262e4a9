// Chapter 12 exercise — a reference solution.
#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig& config) {
  const int64_t L = config.n_layer, C = config.n_embd, T = config.block_size, V = config.vocab_size;
  // One block: ln_1 and ln_2 (2C each), c_attn C -> 3C (3C² + 3C), attn.c_proj C -> C
  // (C² + C), mlp.c_fc C -> 4C (4C² + 4C), mlp.c_proj 4C -> C (4C² + C): 12C² + 13C.
  const int64_t block = 12 * C * C + 13 * C;
  // wte (V, C), wpe (T, C), the final layer norm 2C; an untied head is one more (V, C).
  return L * block + V * C + T * C + 2 * C + (config.tied ? 0 : V * C);
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

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig& config, int64_t T) {
  const int64_t L = config.n_layer, C = config.n_embd, V = config.vocab_size;
  FlopsPerToken f;
  // A token meets a weight in the four Linear layers of each block, C·3C + C·C + C·4C + 4C·C
  // = 12C² multiply-adds, and in the LM head, C·V, whether its weight is wte's (tied) or its
  // own: the embeddings are looked up, and biases and layer norms only add and scale.
  const int64_t block_weights = 2 * 12 * C * C;
  f.weights_forward = L * block_weights + 2 * C * V;
  // Per head, a token's query meets the T keys (T·D multiply-adds) and its T attention
  // weights meet the T values (T·D): 2·T·C over the H heads, in full: the matmul computes
  // every score and causal_softmax masks the upper half afterwards. T, the sequence's length,
  // not block_size.
  const int64_t block_attention = 2 * 2 * T * C;
  f.attention_forward = L * block_attention;
  // Backward computes two products of the same size for each one of the forward pass: the
  // gradient of its input and of its weight (of q and k, of att and v): 3× the forward.
  // Recomputed blocks run their forward once more in backward; the head does not.
  const int64_t forward = f.weights_forward + f.attention_forward;
  f.training_step = 3 * forward + (config.recompute_blocks ? L * (block_weights + block_attention) : 0);
  return f;
}
