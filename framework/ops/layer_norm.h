#pragma once
// framework/ops/layer_norm.h — layer normalisation over the last dimension.
//
// Legend: C the normalised (last) dim; R = every other position, "rows" (B·T in a GPT).
//
//   μ_r  = (1/C) Σ_c x[r, c]           σ²_r = (1/C) Σ_c (x[r, c] − μ_r)²   (biased, as PyTorch)
//   x̂    = (x − μ_r) / √(σ²_r + eps)
//   y    = weight ⊙ x̂ + bias
//
// x (..., C); weight, bias (C), each may be undefined (no scale / no shift). Unlike batch
// norm nothing depends on the other rows, so training and evaluation are the same.
//
// Dtypes: the statistics and the arithmetic are F32 (F64 for F64) whatever x is, rounded
// once to x's dtype. weight and bias may be F32 while x is F16/BF16; their gradients come
// back in their own dtype. Under autocast the policy runs layer_norm in F32 — x, weight and
// bias are cast to F32 and y is F32 — as PyTorch's autocast does (it is on its fp32 list).
// On the GPU the same recipe runs in kernels (cuda/ops/layernorm.h), F32 math in every storage
// type; the per-row statistics the backward needs stay on the device.
#include "framework/tensor/tensor.h"

namespace hg {

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);

}  // namespace hg
