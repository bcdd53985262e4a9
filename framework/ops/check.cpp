#include "framework/ops/check.h"

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace hg {

void check_defined(const char* op, const Tensor& t, const char* what) {
  if (!t.defined()) op_error(op, fmt::format("{} is an undefined tensor", what));
}

void check_same_dtype(const char* op, const Tensor& a, const char* an, const Tensor& b,
                      const char* bn) {
  if (a.dtype() != b.dtype())
    op_error(op, fmt::format("dtype mismatch: {} is {}, {} is {}; cast one with .to(DType::...) "
                             "so both have the same dtype",
                             an, dtype_name(a.dtype()), bn, dtype_name(b.dtype())));
}

void check_same_device(const char* op, const Tensor& a, const char* an, const Tensor& b,
                       const char* bn) {
  if (a.device() != b.device())
    op_error(op, fmt::format("device mismatch: {} is on {}, {} is on {}; move one with .to(Device::...)",
                             an, device_name(a.device()), bn, device_name(b.device())));
}

void check_cpu(const char* op, const Tensor& t, const char* what) {
  if (t.device() != Device::CPU)
    op_error(op, fmt::format("{} is on the GPU, and this op runs on the CPU only; "
                             "move it with .to(Device::CPU)", what));
}

void no_cuda_build(const char* op) {
  throw std::runtime_error(std::string(op) + ": built without CUDA; use --device cpu");
}

void check_dim(const char* op, const Tensor& t, const char* what, int64_t ndim, const char* layout) {
  if (t.dim() != ndim)
    op_error(op, fmt::format("{} must have {} dimensions {}, got shape {}", what, ndim, layout,
                             shape_str(t.shape())));
}

int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim) {
  int64_t d = dim < 0 ? dim + ndim : dim;
  if (d < 0 || d >= ndim)
    op_error(op, fmt::format("dim {} is out of range for a tensor with {} dimensions", dim, ndim));
  return d;
}

}  // namespace hg
