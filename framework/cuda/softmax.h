#pragma once
// framework/cuda/softmax.h — softmax, log-softmax and the fused cross entropy on GPU tensors
// (cuda/ops/softmax.h; F32 math in the storage dtype's kernels).
#include <cstdint>
#include <memory>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg::cuda {

Tensor softmax(const Tensor& x, int64_t dim, bool log);
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log);
// The class ids, checked by the op, copied to the GPU as int32.
std::shared_ptr<Storage> upload_targets(const std::vector<int32_t>& targets);
Tensor cross_entropy(const Tensor& logits, const Storage& targets);
Tensor cross_entropy_backward(const Tensor& logits, const Storage& targets, const Tensor& dloss);

}  // namespace hg::cuda
