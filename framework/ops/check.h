#pragma once
// framework/ops/check.h — the precondition checks at the top of every op.
//
// Each throws std::invalid_argument with a message that starts with the op's name and says
// what was expected and what came, e.g.
//   "matmul: inner sizes differ: a is (4, 3), b is (5, 2) — a's columns (3) must equal b's rows (5)"
#include <string>

#include "framework/tensor/tensor.h"

namespace hg {

void check_defined(const char* op, const Tensor& t, const char* what);
// Same dtype for both (no silent promotion: cast explicitly with .to()).
void check_same_dtype(const char* op, const Tensor& a, const char* an, const Tensor& b,
                      const char* bn);
// Same device for both.
void check_same_device(const char* op, const Tensor& a, const char* an, const Tensor& b,
                       const char* bn);
// The CPU path: a CUDA tensor here means this op has no CUDA kernel (yet).
void check_cpu(const char* op, const Tensor& t, const char* what);
// The `case Device::CUDA:` of an op in a build without CUDA (a CUDA tensor cannot exist
// there, but say so plainly if one ever reaches an op): "built without CUDA; use --device cpu".
[[noreturn]] void no_cuda_build(const char* op);
// Exactly `ndim` dimensions, `layout` names them for the message: "(N, C, H, W)".
void check_dim(const char* op, const Tensor& t, const char* what, int64_t ndim,
               const char* layout);
// Normalise a possibly negative dim against t.dim(); throws when out of range.
int64_t wrap_dim(const char* op, int64_t dim, int64_t ndim);

}  // namespace hg
