#pragma once
// Chapter 08 exercise: the unscale step of static loss scaling.
//
// backward ran on loss·S, so the model's F16 gradients hold S·g (or inf where S·g passed
// 65504). Before clipping and the optimizer step, the F32 master gradients must get the
// true gradient g back, and the program must know whether anything overflowed.
//
// exercise.cpp is yours; `./lab check 08` grades it.
#include <cstdint>

#include "framework/dtype/half.h"

// master_grad[i] = float(scaled_grad[i]) / loss_scale, for i in [0, n).
// Returns true when any scaled_grad[i] is inf or NaN.
bool unscale_to_master(const hg::half* scaled_grad, float* master_grad, int64_t n, float loss_scale);
