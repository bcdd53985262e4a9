#pragma once
// Chapter 12 exercise: predict where a training run's model states go, before running it.
//
// Two parts, graded against the memory accountant (framework/memory/accountant.h):
//
//   student_gpt_parameters(config)     how many scalars the GPT of framework/nn/models/gpt.h
//                                      trains: every weight matrix, bias, embedding and layer
//                                      norm, counted from the shapes in that header
//   student_model_states(P, opt, prec) the bytes that P parameters hold after one training
//                                      step, per category: the parameters themselves, their
//                                      gradients, and the optimizer's state
//
// Optimizers: SGD, SGD with momentum, Adam. Precisions: FP32 (everything F32), or Mixed: the
// model in F16, with halfgrad's FP32 master weights (framework/amp/master_weights.h) that the
// optimizer updates. The answer is what halfgrad holds, as its accountant measures it.
//
// exercise.cpp is yours; `./lab check 12` builds GPTs of a few sizes, runs one step with each
// optimizer and precision, and compares your bytes with the accountant's.
#include <cstdint>

#include "framework/memory/formulas.h"  // hg::memory::OptimizerKind, hg::memory::Precision
#include "framework/nn/models/gpt.h"    // hg::nn::GPTConfig

struct ModelStates {
  int64_t parameters = 0;       // bytes of the weights the model computes with
  int64_t gradients = 0;        // bytes of every gradient kept after backward
  int64_t optimizer_state = 0;  // bytes the optimizer (and the master weights) keep
};

int64_t student_gpt_parameters(const hg::nn::GPTConfig& config);
ModelStates student_model_states(int64_t params, hg::memory::OptimizerKind optimizer,
                                 hg::memory::Precision precision);
