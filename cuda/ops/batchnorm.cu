// Batch normalisation (batchnorm.h). Block c handles channel c: its threads stride over the
// M = N·H·W values (for each n, the contiguous plane x[n][c][0..HW)), reduce with block_sum,
// and write. Two passes for the variance (mean first, then Σ (x − mean)²): the one-pass
// E[x²] − E[x]² loses all precision when |mean| ≫ std.
#include "cuda/ops/batchnorm.h"
#include "cuda/ops/kernel_common.cuh"

namespace hg::cuda {

// Element j (0 <= j < M) of channel c in (N, C, HW).
__device__ __forceinline__ int64_t bn_index(int64_t j, int64_t c, int64_t C, int64_t HW) {
  return ((j / HW) * C + c) * HW + j % HW;
}

__global__ void bn_forward_train_kernel(const float* x, const float* gamma, const float* beta, int64_t N, int64_t C,
                                        int64_t HW, float eps, float momentum, float* running_mean,
                                        float* running_var, float* y, float* save_mean, float* save_invstd) {
  const int64_t c = blockIdx.x, M = N * HW;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) s += x[bn_index(j, c, C, HW)];
  const float mean = block_sum(s) / float(M);
  float q = 0.0f;
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
    const float d = x[bn_index(j, c, C, HW)] - mean;
    q += d * d;
  }
  const float var = block_sum(q) / float(M);
  const float invstd = rsqrtf(var + eps);
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
    const int64_t at = bn_index(j, c, C, HW);
    y[at] = gamma[c] * (x[at] - mean) * invstd + beta[c];
  }
  if (threadIdx.x == 0) {
    save_mean[c] = mean;
    save_invstd[c] = invstd;
    if (running_mean) running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * mean;
    if (running_var) {
      const float unbiased = M > 1 ? var * float(M) / float(M - 1) : var;
      running_var[c] = (1.0f - momentum) * running_var[c] + momentum * unbiased;
    }
  }
}

__global__ void bn_forward_eval_kernel(const float* x, const float* gamma, const float* beta, const float* rmean,
                                       const float* rvar, int64_t N, int64_t C, int64_t HW, float eps, float* y) {
  HG_GRID_STRIDE(i, N * C * HW) {
    const int64_t c = (i / HW) % C;
    y[i] = gamma[c] * (x[i] - rmean[c]) * rsqrtf(rvar[c] + eps) + beta[c];
  }
}

__global__ void bn_backward_kernel(const float* dy, const float* x, const float* gamma, const float* save_mean,
                                   const float* save_invstd, int64_t N, int64_t C, int64_t HW, float* dx,
                                   float* dgamma, float* dbeta) {
  const int64_t c = blockIdx.x, M = N * HW;
  const float mean = save_mean[c], invstd = save_invstd[c];
  float sdy = 0.0f, sdyx = 0.0f;
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
    const int64_t at = bn_index(j, c, C, HW);
    sdy += dy[at];
    sdyx += dy[at] * (x[at] - mean) * invstd;
  }
  sdy = block_sum(sdy);    // dbeta_c
  sdyx = block_sum(sdyx);  // dgamma_c
  const float k = gamma[c] * invstd;
  for (int64_t j = threadIdx.x; j < M; j += blockDim.x) {
    const int64_t at = bn_index(j, c, C, HW);
    const float xhat = (x[at] - mean) * invstd;
    dx[at] = k * (dy[at] - sdy / float(M) - xhat * sdyx / float(M));
  }
  if (threadIdx.x == 0) {
    dgamma[c] = sdyx;
    dbeta[c] = sdy;
  }
}

void batch_norm_forward_train(const float* x, const float* gamma, const float* beta, int64_t N, int64_t C, int64_t HW,
                              float eps, float momentum, float* running_mean, float* running_var, float* y,
                              float* save_mean, float* save_invstd) {
  if (C == 0) return;
  bn_forward_train_kernel<<<unsigned(C), kThreads>>>(x, gamma, beta, N, C, HW, eps, momentum, running_mean,
                                                      running_var, y, save_mean, save_invstd);
  HG_CUDA_CHECK(cudaGetLastError());
}

void batch_norm_forward_eval(const float* x, const float* gamma, const float* beta, const float* running_mean,
                             const float* running_var, int64_t N, int64_t C, int64_t HW, float eps, float* y) {
  const int64_t n = N * C * HW;
  if (n == 0) return;
  bn_forward_eval_kernel<<<launch_1d(n), kThreads>>>(x, gamma, beta, running_mean, running_var, N, C, HW, eps, y);
  HG_CUDA_CHECK(cudaGetLastError());
}

void batch_norm_backward(const float* dy, const float* x, const float* gamma, const float* save_mean,
                         const float* save_invstd, int64_t N, int64_t C, int64_t HW, float* dx, float* dgamma,
                         float* dbeta) {
  if (C == 0) return;
  bn_backward_kernel<<<unsigned(C), kThreads>>>(dy, x, gamma, save_mean, save_invstd, N, C, HW, dx, dgamma, dbeta);
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
