#pragma once
// framework/ops/dropout.h — inverted dropout.
//
// training: each element is kept with probability 1 − p and then scaled by 1/(1 − p), so the
// expected value is unchanged and eval needs no rescaling; dropped elements become 0.
// eval (or p = 0): y = x, nothing recorded. The mask is drawn from `gen` in element order,
// so the same generator state gives the same mask.
// Backward: dx = dy · mask / (1 − p), with the same mask.
#include "framework/tensor/generator.h"
#include "framework/tensor/tensor.h"

namespace hg {

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen);

}  // namespace hg
