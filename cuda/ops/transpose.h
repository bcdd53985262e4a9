#pragma once
// y (cols, rows) = xᵀ for a row-major x (rows, cols), on device buffers, any DType.
#include "cuda/ops/dtype.h"

namespace hg::cuda {

void launch_transpose(DType dt, const void* x, int64_t rows, int64_t cols, void* y);

}  // namespace hg::cuda
