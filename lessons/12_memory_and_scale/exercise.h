#pragma once
// Chapter 12 exercise: predict what a training run costs, before running it: where its model
// states go, and how many FLOPs a step computes.
//
// Three parts:
//
//   student_gpt_parameters(config)     how many scalars the GPT of framework/nn/models/gpt.h
//                                      trains: every weight matrix, bias, embedding and layer
//                                      norm, counted from the shapes in that header
//   student_model_states(P, opt, prec) the bytes that P parameters hold after one training
//                                      step, per category: the parameters themselves, their
//                                      gradients, and the optimizer's state
//   student_flops_per_token(config, T) the FLOPs per token of that GPT's matmuls on
//                                      sequences of T tokens (1 ≤ T ≤ block_size): the
//                                      forward pass's two kinds of products, and a whole
//                                      training step
//
// Optimizers: SGD, SGD with momentum, Adam. Precisions: FP32 (everything F32), or Mixed: the
// model in F16, with halfgrad's FP32 master weights (framework/amp/master_weights.h) that the
// optimizer updates. The answer is what halfgrad holds, as its accountant measures it.
//
// FLOPs: a multiply-add is 2 FLOPs, and only the products of matrices count (matmul and
// linear, framework/ops/matmul.h); the rest of a step (embedding lookups, layer norms, GELU,
// softmax, the loss, additions) is left out, as Kaplan et al. (2020) and PaLM (2022) leave
// it out. "Per token": a batch's FLOPs divided by its tokens. The answer is what the model's
// graph computes, counted by the grader op by op.
//
// exercise.cpp is yours; `./lab check 12` builds GPTs of sizes it draws for each grading, runs
// one step with each optimizer and precision and compares your bytes with the accountant's,
// and counts the products of their forward and backward passes.
#include <cstdint>

#include "framework/memory/formulas.h"  // hg::memory::OptimizerKind, hg::memory::Precision
#include "framework/nn/models/gpt.h"    // hg::nn::GPTConfig

struct ModelStates {
  int64_t parameters = 0;       // bytes of the weights the model computes with
  int64_t gradients = 0;        // bytes of every gradient kept after backward
  int64_t optimizer_state = 0;  // bytes the optimizer (and the master weights) keep
};

struct FlopsPerToken {
  int64_t weights_forward = 0;    // the forward pass's products of activations with a trained weight
  int64_t attention_forward = 0;  // the forward pass's products of activations with activations
  int64_t training_step = 0;      // everything one training step multiplies: forward, backward,
                                  // and what config.recompute_blocks adds
};

int64_t student_gpt_parameters(const hg::nn::GPTConfig& config);
ModelStates student_model_states(int64_t params, hg::memory::OptimizerKind optimizer,
                                 hg::memory::Precision precision);
FlopsPerToken student_flops_per_token(const hg::nn::GPTConfig& config, int64_t T);
