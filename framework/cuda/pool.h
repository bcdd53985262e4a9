#pragma once
// framework/cuda/pool.h — max and average pooling on GPU tensors (F32 kernels,
// cuda/ops/conv.h; F16/BF16 inputs are widened and the result rounded back once). The CPU
// side is the loops of framework/ops/pool.cpp.
#include <cstdint>
#include <memory>

#include "framework/tensor/tensor.h"

namespace hg::cuda {

// x (N, C, H, W), K x K windows, stride S, padding P. argmax: the GPU buffer the backward
// needs (set by the forward).
Tensor max_pool2d(const Tensor& x, int64_t K, int64_t S, int64_t P, std::shared_ptr<Storage>& argmax);
Tensor max_pool2d_backward(const Tensor& dy, const Storage& argmax, const Shape& x_shape, int64_t K,
                           int64_t S, int64_t P);
Tensor avg_pool2d(const Tensor& x, int64_t K, int64_t S, int64_t P);
Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, int64_t K, int64_t S, int64_t P);

}  // namespace hg::cuda
