#pragma once
// framework/ops/unary.h — elementwise functions of one tensor: activations, exp, log.
//
// Every one computes in F32 (F64 for F64 tensors) and rounds to the input's dtype. Backward
// is dL/dx = dL/dy · f'(x), with f'(x) written above each backward in unary.cpp.
#include "framework/tensor/tensor.h"

namespace hg {

Tensor relu(const Tensor& x);     // max(x, 0)
Tensor gelu(const Tensor& x);     // x·Φ(x), the exact (erf) form, as PyTorch's default
Tensor sigmoid(const Tensor& x);  // 1 / (1 + e^−x)
Tensor tanh(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);      // natural log; log(0) = −inf, log(<0) = NaN
Tensor sqrt(const Tensor& x);
Tensor pow(const Tensor& x, double p);  // x^p
Tensor square(const Tensor& x);         // x²

}  // namespace hg
