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
// (PyTorch's semantics.)
//
// How the work is spread: a channel's M values are cut into S slices (bn_slices), and a grid of
// (S, C) blocks works on them, each block on one slice of one channel, so that even a layer with
// few channels and many values per channel (64 channels of a 56 x 56 image at batch 256: 200,704
// values each) fills the GPU. The sums go through per-slice partials, added in a fixed order:
// the results are the same on every run. Two passes for the variance (the mean first, then
// Σ (x − mean)²): the one-pass E[x²] − E[x]² loses all precision when |mean| ≫ std.
#include "cuda/runtime/hd.h"

#include <cstdint>

namespace hg::cuda {

// Element j (0 <= j < M) of channel c in (N, C, HW): image j / HW, pixel j % HW.
HG_HD int64_t bn_index(int64_t j, int64_t c, int64_t C, int64_t HW) { return ((j / HW) * C + c) * HW + j % HW; }

// Slices per channel: enough blocks to fill a large GPU (about 1024 in all), each slice at
// least about 1024 values (4 per thread), at most kMaxBnSlices.
constexpr int64_t kMaxBnSlices = 256;
HG_HD int64_t bn_slices(int64_t C, int64_t M) {
  const int64_t want = (1024 + C - 1) / C, room = (M + 1023) / 1024;
  int64_t s = want < room ? want : room;
  if (s > kMaxBnSlices) s = kMaxBnSlices;
  return s < 1 ? 1 : s;
}
// Slice s of S covers values [first, last) of a channel's M.
HG_HD void bn_slice_range(int64_t s, int64_t S, int64_t M, int64_t& first, int64_t& last) {
  const int64_t L = (M + S - 1) / S;
  first = s * L < M ? s * L : M;
  last = first + L < M ? first + L : M;
}

// save_mean, save_invstd (C): what the backward needs. running_* may be nullptr (not tracked).
void launch_batch_norm_forward_train(const float* x, const float* gamma, const float* beta, int64_t N, int64_t C, int64_t HW,
                                     float eps, float momentum, float* running_mean, float* running_var, float* y,
                                     float* save_mean, float* save_invstd);
void launch_batch_norm_forward_eval(const float* x, const float* gamma, const float* beta, const float* running_mean,
                                    const float* running_var, int64_t N, int64_t C, int64_t HW, float eps, float* y);
// invstd (C) = 1/√(running_var + eps), computed in double as the CPU does: what the eval-mode
// backward needs, made on the GPU (no copy of running_var to the host on every call).
void launch_batch_norm_invstd(const float* running_var, int64_t C, double eps, float* invstd);
// dgamma, dbeta (C) are overwritten.
void launch_batch_norm_backward(const float* dy, const float* x, const float* gamma, const float* save_mean,
                                const float* save_invstd, int64_t N, int64_t C, int64_t HW, float* dx, float* dgamma,
                                float* dbeta);

}  // namespace hg::cuda
