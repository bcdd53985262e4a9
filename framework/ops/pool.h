#pragma once
// framework/ops/pool.h — pooling over the spatial dims of (N, C, H, W).
//
//   max_pool2d: y = the largest value in each KxK window. Backward routes dy to the one
//               input that won (its index is saved in the forward): the others get 0.
//   avg_pool2d: y = the mean of each window; padding counts as zeros in the mean (PyTorch's
//               default count_include_pad=True). Backward spreads dy/K² over the window.
//   global_avg_pool2d: the mean over all of H·W, (N, C, H, W) -> (N, C).
//
// OH = (H + 2·padding − kernel) / stride + 1; stride -1 means stride = kernel.
// Computed in F32 (F64 for F64), stored in the input dtype.
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg {

Tensor max_pool2d(const Tensor& x, int64_t kernel, int64_t stride = -1, int64_t padding = 0);
Tensor avg_pool2d(const Tensor& x, int64_t kernel, int64_t stride = -1, int64_t padding = 0);
Tensor global_avg_pool2d(const Tensor& x);  // (N, C, H, W) -> (N, C)

}  // namespace hg
