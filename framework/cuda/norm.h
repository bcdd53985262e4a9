#pragma once
// framework/cuda/norm.h — normalisation layers on GPU tensors:
//   batch norm over (N, C, H, W): F32 kernels (cuda/ops/batchnorm.h: statistics, apply and
//     backward, as the CPU's helpers in framework/ops/batch_norm.cpp); F16/BF16 inputs are
//     widened, results rounded back once.
//   layer norm over the last dim: kernels in every storage type with F32 math
//     (cuda/ops/layernorm.h, the recipe of framework/ops/layer_norm.cpp); weight and bias F32.
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg::cuda {

// Batch norm statistics the backward needs: per-channel mean and 1/√(var + eps), F32 on the GPU.
struct BatchNormSaved {
  Tensor mean, invstd;
};
// Training: the batch's statistics (running_* updated in place when both are defined);
// eval: the running statistics. gamma/beta undefined mean 1 and 0.
Tensor batch_norm2d(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                    const Tensor& running_var, bool training, double momentum, double eps,
                    BatchNormSaved& saved);
// dx, dgamma, dbeta (dgamma/dbeta in gdt/bdt).
std::vector<Tensor> batch_norm2d_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                          const BatchNormSaved& saved, bool training, DType gdt,
                                          DType bdt);

// Layer norm statistics the backward needs, one per row of x seen as (R, C): the mean
// relative to the row's first element and 1/√(σ² + eps); F32 on the GPU.
struct LayerNormSaved {
  Tensor mean_rel, rstd;
};
// y in x's dtype; weight/bias (C) of any dtype, undefined mean 1 and 0.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, LayerNormSaved& saved);
// dx, dweight, dbias; each computed only when its need_* is set (else undefined), dweight and
// dbias in wdt and bdt.
std::vector<Tensor> layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                        const LayerNormSaved& saved, bool need_dx, bool need_dweight,
                                        bool need_dbias, DType wdt, DType bdt);

}  // namespace hg::cuda
