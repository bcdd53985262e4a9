#pragma once
// framework/ops/softmax.h — softmax and log_softmax along one dimension.
//
//   softmax(x)_i     = e^(x_i − m) / Σ_j e^(x_j − m)         m = max_j x_j
//   log_softmax(x)_i = x_i − m − log Σ_j e^(x_j − m)
//
// Subtracting the max changes nothing mathematically and keeps every exponent ≤ 0, so
// e^(...) never overflows (e^89 already overflows F32; e^12 overflows F16). Computed in F32
// (F64 for F64), rounded to the input dtype.
#include "framework/tensor/tensor.h"

namespace hg {

Tensor softmax(const Tensor& x, int64_t dim = -1);
Tensor log_softmax(const Tensor& x, int64_t dim = -1);

}  // namespace hg
