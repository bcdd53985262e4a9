#pragma once
// Chapter 07 exercise: one SGD step with F32 master weights.
//
// Forward and backward ran on the F16 model and left F16 gradients. The optimizer owns an
// F32 master copy of every weight and an F32 momentum buffer. Write the step:
//
//   model     (n) the F16 weights the next forward pass will use      updated in place
//   master    (n) their F32 master copies                            updated in place
//   velocity  (n) the F32 momentum buffer (0 before the first step)  updated in place
//   grad      (n) the F16 gradients of the model weights
//   lr, momentum   SGD with momentum, as in PyTorch: v = momentum·v + g;  w = w − lr·v
//
// exercise.cpp is yours; `./lab check 07` grades it over sequences of steps.
#include <vector>

#include "framework/dtype/half.h"

void master_weight_step(std::vector<hg::half>& model, std::vector<float>& master, std::vector<float>& velocity,
                        const std::vector<hg::half>& grad, float lr, float momentum);
