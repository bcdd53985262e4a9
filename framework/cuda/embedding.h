#pragma once
// framework/cuda/embedding.h — the embedding lookup and its gradient on GPU tensors
// (cuda/ops/embedding.h: a gather, and a scatter-add without atomics). The ids come from the
// host, as the op takes them (checked there: every id in [0, V)); each call uploads them.
#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg::cuda {

// y (out_shape = ids' shape + (C)) = the rows ids of weight (V, C), in weight's dtype.
Tensor embedding(const Tensor& weight, const std::vector<int32_t>& ids, const Shape& out_shape);
// dW (V, C) in dy's dtype: dy's rows (n, C) summed by id, in the order of the positions.
Tensor embedding_backward(const Tensor& dy, const std::vector<int32_t>& ids, int64_t V, int64_t C);

}  // namespace hg::cuda
