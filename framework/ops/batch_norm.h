#pragma once
// framework/ops/batch_norm.h — batch normalisation over (N, H, W) for each channel.
//
//   training:  μ_c, σ²_c = mean and (biased) variance of channel c over the batch and pixels
//              running_mean ← (1 − momentum)·running_mean + momentum·μ
//              running_var  ← (1 − momentum)·running_var  + momentum·σ²·M/(M−1)   (unbiased)
//   eval:      μ, σ² = running_mean, running_var
//   y = γ · (x − μ) / √(σ² + eps) + β
//
// x (N, C, H, W); gamma, beta, running_mean, running_var (C). gamma/beta may be undefined
// (no affine part); the running tensors are updated in place in training mode (they are
// buffers, not parameters, and never get gradients).
//
// Dtypes: statistics are always computed in F32 (F64 for F64). x may be F16/BF16 while
// gamma, beta and the running statistics are F32 — how mixed precision keeps batch norm in
// F32. y has x's dtype; dgamma/dbeta have gamma's/beta's dtype.
#include "framework/tensor/tensor.h"

namespace hg {

Tensor batch_norm2d(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                    const Tensor& running_mean, const Tensor& running_var, bool training,
                    double momentum = 0.1, double eps = 1e-5);

}  // namespace hg
