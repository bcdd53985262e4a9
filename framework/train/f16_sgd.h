#pragma once
// SGD on F16 tensors, every result rounded to F16: what `model.half()` and PyTorch's SGD do
// (chapter 06), and the baseline every later rung of the ladder is compared with (07–09).
//
//   buf = momentum·buf + g   (buf = g on the first step)      buf is F16
//   p   = p − lr·buf                                         p is F16
//
// When |lr·buf| is at or below half an F16 ULP of p, p does not change: the update is lost
// (2048 − 1 = 2048; chapter 06 measures how often). The framework's optimizers keep their
// state in F32, which is already the fix of chapter 07, so the naive step is written here.
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg::train {

// One step over `params` (F16, each with its .grad); `bufs` holds the F16 momentum buffers,
// created on the first call (pass an empty vector, then the same one every step).
void sgd_step_f16(const std::vector<Tensor>& params, std::vector<Tensor>& bufs, float lr, float momentum);

}  // namespace hg::train
