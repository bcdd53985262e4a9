// framework/cuda/common.cpp — the wrappers' shared checks and helpers (common.h).
#include "framework/cuda/common.h"

#include <fmt/format.h>

#include "framework/cuda/copy.h"
#include "framework/ops/check.h"

namespace hg::cuda {

DType kernel_dtype(const char* op, const Tensor& t) {
  if (t.dtype() == DType::F64)
    op_error(op, "F64 tensors have no CUDA kernels; cast to F32, or compute in F64 on the CPU");
  return t.dtype();
}

void need_gpu_contiguous(const char* op, const Tensor& t, const char* what) {
  if (t.device() != Device::CUDA)
    op_error(op, fmt::format("{} is on the CPU; move it with .to(Device::CUDA)", what));
  if (!t.is_contiguous())
    op_error(op, fmt::format("{} is a non-contiguous view on the GPU; the CUDA kernels need "
                             "row-major memory", what));
}

Tensor gpu_empty(const Shape& shape, DType dt) { return Tensor::empty(shape, dt, Device::CUDA); }

Tensor as_f32(const Tensor& x) { return x.dtype() == DType::F32 ? x : cast(x, DType::F32); }

Tensor round_back(const Tensor& y, DType dt) {
  return !y.defined() || y.dtype() == dt ? y : cast(y, dt);
}

void split_at(const Shape& s, int64_t dim, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = 1;
  inner = 1;
  n = s[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= s[d];
  for (int64_t d = dim + 1; d < static_cast<int64_t>(s.size()); ++d) inner *= s[d];
}

}  // namespace hg::cuda
