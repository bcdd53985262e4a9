// Chapter 12 exercise — what a training run costs (see exercise.h).
//
// Part 1, the parameter count. Walk gpt.h's diagram and count the scalars of every tensor
// the model trains, in terms of L = n_layer, C = n_embd, T = block_size, V = vocab_size:
// the two embeddings, the four Linear layers and two layer norms of each block (a Linear
// C -> N has a weight and a bias; a layer norm has a weight and a bias), the final layer
// norm, and the LM head, which is only a tensor of its own when it is not tied.
// Part 2, the bytes. For each precision and optimizer: how many bytes per parameter does
// each category hold after one step? What does the optimizer keep for each parameter, and
// what do halfgrad's master weights keep, and under which tag? (README "## Where the memory
// goes"; framework/amp/master_weights.h)
// Part 3, the FLOPs. Follow one token through gpt.h's diagram and framework/nn/models/gpt.cpp:
// which steps multiply it by a weight, and which parameters are only looked up or added?
// What does attention multiply that is not a weight, and how large is it for a sequence of
// T tokens? What does backward compute for each product of the forward pass, and what does
// config.recompute_blocks run again? (README "## The compute"; framework/ops/matmul.cpp,
// framework/autograd/recompute.h)
// halfgrad's own answers (GPT's num_parameters, hg::nn::gpt_memory, hg::memory::bytes_per_param,
// building the model or its tensors) are not allowed here: the checker refuses them.
// Run: ./lab check 12
#include "lessons/12_memory_and_scale/exercise.h"

int64_t student_gpt_parameters(const hg::nn::GPTConfig& config) {
  // TODO: the number of trained scalars of a GPT with this configuration.
  return 0;
}

ModelStates student_model_states(int64_t params, hg::memory::OptimizerKind optimizer,
                                 hg::memory::Precision precision) {
  ModelStates s;
  // TODO: s.parameters, s.gradients and s.optimizer_state, in bytes, for `params` parameters.
  return s;
}

FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig& config, int64_t T) {
  FlopsPerToken f;
  // TODO: f.weights_forward, f.attention_forward and f.training_step, per token of sequences
  // of T tokens.
  return f;
}
