#pragma once
// framework/cuda/elementwise.h — elementwise ops on GPU tensors (the CPU side:
// framework/cpu/elementwise.h). Tensor in, Tensor out; each calls launchers of
// cuda/ops/elementwise.h and cuda/ops/unary.h. Autograd stays in the ops.
#include "cuda/ops/elementwise.h"  // Binary
#include "cuda/ops/unary.h"        // Unary
#include "framework/tensor/tensor.h"

namespace hg::cuda {

// y (out_shape) = a (op) b with broadcasting.
Tensor binary(const char* op, Binary kind, const Tensor& a, const Tensor& b, const Shape& out_shape);
// y = a (op) s, or s (op) a with scalar_first.
Tensor binary_scalar(const char* op, Binary kind, const Tensor& a, double s, bool scalar_first = false);
// The gradient of a broadcast input: g summed down to `shape`.
Tensor sum_to(const Tensor& g, const Shape& shape);

// y = f(x) and its backward; `saved` is x or y, as cuda/ops/unary.h's table says.
Tensor unary(const char* op, Unary kind, const Tensor& x);
Tensor unary_backward(Unary kind, const Tensor& dy, const Tensor& saved);
Tensor pow(const Tensor& x, double p);
Tensor pow_backward(const Tensor& dy, const Tensor& x, double p);

void add_(Tensor& dst, const Tensor& src, double alpha);  // dst += alpha · src
void mul_(Tensor& dst, double s);                         // dst *= s
void fill_(Tensor& dst, double value);                    // the CPU's rounding of value, on the device

// Dropout: y = x · mask, mask (F32, on the GPU) holding keep_i / (1 − p); in F32, rounded once.
Tensor apply_mask(const Tensor& x, const Tensor& mask);

}  // namespace hg::cuda
