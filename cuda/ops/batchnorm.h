#pragma once
// Batch normalisation over (N, C, H, W), per channel c, on device buffers (F32).
// M = N·H·W values per channel.
//
// forward (training):  mean_c = (1/M) Σ x,  var_c = (1/M) Σ (x − mean_c)²   (biased, for normalising)
//                      x̂ = (x − mean_c) · invstd_c,  invstd_c = 1/√(var_c + eps)
//                      y = gamma_c · x̂ + beta_c
//                      running_mean = (1 − momentum)·running_mean + momentum·mean_c
//                      running_var  = (1 − momentum)·running_var  + momentum·var_c·M/(M − 1)  (unbiased)
// forward (eval):      y = gamma_c · (x − running_mean_c)/√(running_var_c + eps) + beta_c
// backward:            dbeta_c  = Σ dy,   dgamma_c = Σ dy · x̂
//                      dx = gamma_c · invstd_c · (dy − dbeta_c/M − x̂ · dgamma_c/M)
// (PyTorch's semantics; one block per channel, block reductions in F32.)
#include <cstdint>

namespace hg::cuda {

// save_mean, save_invstd (C): what the backward needs. running_* may be nullptr (not tracked).
void batch_norm_forward_train(const float* x, const float* gamma, const float* beta, int64_t N, int64_t C, int64_t HW,
                              float eps, float momentum, float* running_mean, float* running_var, float* y,
                              float* save_mean, float* save_invstd);
void batch_norm_forward_eval(const float* x, const float* gamma, const float* beta, const float* running_mean,
                             const float* running_var, int64_t N, int64_t C, int64_t HW, float eps, float* y);
// dgamma, dbeta (C) are overwritten.
void batch_norm_backward(const float* dy, const float* x, const float* gamma, const float* save_mean,
                         const float* save_invstd, int64_t N, int64_t C, int64_t HW, float* dx, float* dgamma,
                         float* dbeta);

}  // namespace hg::cuda
