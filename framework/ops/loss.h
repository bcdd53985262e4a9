#pragma once
// framework/ops/loss.h — losses, each returning a scalar (shape ()) mean over the batch.
//
// cross_entropy(logits (N, C), targets): one class id per row, in [0, C).
//
//   loss = (1/N) Σ_n [ log Σ_c e^{x_nc} − x_n,t_n ]       (= mean of −log softmax(x)_t)
//
// Fused: log-sum-exp with the max subtracted (no overflow, no log(0)), and the backward in
// one line, dL/dx_nc = (softmax(x)_nc − [c = t_n]) / N, instead of going through
// log_softmax and a gather. Accumulates in F32 (F64 for F64); the loss and the gradient
// have the logits' dtype.
//
// Targets: a std::vector<int32_t> of class ids (what hg::data gives as labels), or an (N)
// tensor of any float dtype holding integer ids (checked: integral and in range).
#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg {

Tensor cross_entropy(const Tensor& logits, const std::vector<int32_t>& targets);
Tensor cross_entropy(const Tensor& logits, const Tensor& targets);

// mean((pred − target)²) over all elements; same shape and dtype.
Tensor mse_loss(const Tensor& pred, const Tensor& target);

}  // namespace hg
