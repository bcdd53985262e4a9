#pragma once
// framework/cuda/norm.h — batch normalisation over (N, C, H, W) on GPU tensors (F32 kernels,
// cuda/ops/batchnorm.h: statistics, apply and backward, as the CPU's helpers in
// framework/ops/batch_norm.cpp). F16/BF16 inputs are widened; results are rounded back once.
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

}  // namespace hg::cuda
