// Batch normalisation (batchnorm.h). A grid of (C, S) blocks: block (c, s) handles slice s of
// channel c (bn_slice_range), its threads striding over the slice's values; per-slice sums go
// to a small buffer of partials (C, S), and every block that needs a channel's total adds that
// channel's S partials itself, in the same fixed order (sum_partials): deterministic, and no
// block waits for another.
//
//   training forward:  bn_sum_kernel (Σx) -> bn_sqdev_kernel (Σ (x − mean)²) -> bn_apply_train_kernel
//   backward:          bn_backward_sums_kernel (Σdy, Σdy·x̂) -> bn_backward_apply_kernel
#include "cuda/ops/batchnorm.h"
#include "cuda/ops/kernel_common.cuh"
#include "cuda/runtime/memory.h"

namespace hg::cuda {

// Σ_s partial[c][s] for the block's channel, the same in every block (every thread gets it).
__device__ __forceinline__ float sum_partials(const float* partial, int64_t c, int64_t S) {
  float acc = 0.0f;
  for (int64_t s = threadIdx.x; s < S; s += blockDim.x) acc += partial[c * S + s];
  return block_sum(acc);
}

__global__ void bn_sum_kernel(const float* x, int64_t C, int64_t HW, int64_t M, float* partial) {
  const int64_t c = blockIdx.x, s = blockIdx.y, S = gridDim.y;
  int64_t first, last;
  bn_slice_range(s, S, M, first, last);
  float acc = 0.0f;
  for (int64_t j = first + threadIdx.x; j < last; j += blockDim.x) acc += x[bn_index(j, c, C, HW)];
  acc = block_sum(acc);
  if (threadIdx.x == 0) partial[c * S + s] = acc;
}

__global__ void bn_sqdev_kernel(const float* x, int64_t C, int64_t HW, int64_t M, const float* sum_partial,
                                float* sq_partial) {
  const int64_t c = blockIdx.x, s = blockIdx.y, S = gridDim.y;
  const float mean = sum_partials(sum_partial, c, S) / float(M);
  int64_t first, last;
  bn_slice_range(s, S, M, first, last);
  float q = 0.0f;
  for (int64_t j = first + threadIdx.x; j < last; j += blockDim.x) {
    const float d = x[bn_index(j, c, C, HW)] - mean;
    q += d * d;
  }
  q = block_sum(q);
  if (threadIdx.x == 0) sq_partial[c * S + s] = q;
}

__global__ void bn_apply_train_kernel(const float* x, const float* gamma, const float* beta, int64_t C, int64_t HW,
                                      int64_t M, float eps, float momentum, const float* sum_partial,
                                      const float* sq_partial, float* running_mean, float* running_var, float* y,
                                      float* save_mean, float* save_invstd) {
  const int64_t c = blockIdx.x, s = blockIdx.y, S = gridDim.y;
  const float mean = sum_partials(sum_partial, c, S) / float(M);
  const float var = sum_partials(sq_partial, c, S) / float(M);
  const float invstd = rsqrtf(var + eps);
  int64_t first, last;
  bn_slice_range(s, S, M, first, last);
  for (int64_t j = first + threadIdx.x; j < last; j += blockDim.x) {
    const int64_t at = bn_index(j, c, C, HW);
    y[at] = gamma[c] * (x[at] - mean) * invstd + beta[c];
  }
  if (s == 0 && threadIdx.x == 0) {  // one writer per channel
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

__global__ void bn_invstd_kernel(const float* rvar, int64_t C, double eps, float* invstd) {
  HG_GRID_STRIDE(c, C) invstd[c] = float(1.0 / sqrt(double(rvar[c]) + eps));
}

__global__ void bn_backward_sums_kernel(const float* dy, const float* x, const float* save_mean,
                                        const float* save_invstd, int64_t C, int64_t HW, int64_t M, float* p_dy,
                                        float* p_dyx) {
  const int64_t c = blockIdx.x, s = blockIdx.y, S = gridDim.y;
  const float mean = save_mean[c], invstd = save_invstd[c];
  int64_t first, last;
  bn_slice_range(s, S, M, first, last);
  float sdy = 0.0f, sdyx = 0.0f;
  for (int64_t j = first + threadIdx.x; j < last; j += blockDim.x) {
    const int64_t at = bn_index(j, c, C, HW);
    sdy += dy[at];
    sdyx += dy[at] * (x[at] - mean) * invstd;
  }
  sdy = block_sum(sdy);
  sdyx = block_sum(sdyx);
  if (threadIdx.x == 0) {
    p_dy[c * S + s] = sdy;
    p_dyx[c * S + s] = sdyx;
  }
}

__global__ void bn_backward_apply_kernel(const float* dy, const float* x, const float* gamma, const float* save_mean,
                                         const float* save_invstd, int64_t C, int64_t HW, int64_t M,
                                         const float* p_dy, const float* p_dyx, float* dx, float* dgamma,
                                         float* dbeta) {
  const int64_t c = blockIdx.x, s = blockIdx.y, S = gridDim.y;
  const float sdy = sum_partials(p_dy, c, S);     // dbeta_c
  const float sdyx = sum_partials(p_dyx, c, S);   // dgamma_c
  const float mean = save_mean[c], invstd = save_invstd[c];
  const float k = gamma[c] * invstd;
  int64_t first, last;
  bn_slice_range(s, S, M, first, last);
  for (int64_t j = first + threadIdx.x; j < last; j += blockDim.x) {
    const int64_t at = bn_index(j, c, C, HW);
    const float xhat = (x[at] - mean) * invstd;
    dx[at] = k * (dy[at] - sdy / float(M) - xhat * sdyx / float(M));
  }
  if (s == 0 && threadIdx.x == 0) {
    dgamma[c] = sdyx;
    dbeta[c] = sdy;
  }
}

namespace {
// The (C, S) grid of the per-slice kernels. C rides on x (up to 2^31 − 1 channels), S on y.
dim3 bn_grid(int64_t C, int64_t S) { return dim3(unsigned(C), unsigned(S)); }
}  // namespace

void launch_batch_norm_forward_train(const float* x, const float* gamma, const float* beta, int64_t N, int64_t C, int64_t HW,
                                     float eps, float momentum, float* running_mean, float* running_var, float* y,
                                     float* save_mean, float* save_invstd) {
  if (C == 0) return;
  const int64_t M = N * HW, S = bn_slices(C, M);
  DeviceTemp sums(size_t(C * S) * sizeof(float)), sqs(size_t(C * S) * sizeof(float));  // (C, S) partials
  bn_sum_kernel<<<bn_grid(C, S), kThreads>>>(x, C, HW, M, sums.as<float>());
  bn_sqdev_kernel<<<bn_grid(C, S), kThreads>>>(x, C, HW, M, sums.as<float>(), sqs.as<float>());
  bn_apply_train_kernel<<<bn_grid(C, S), kThreads>>>(x, gamma, beta, C, HW, M, eps, momentum, sums.as<float>(),
                                                     sqs.as<float>(), running_mean, running_var, y, save_mean,
                                                     save_invstd);
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_batch_norm_forward_eval(const float* x, const float* gamma, const float* beta, const float* running_mean,
                                    const float* running_var, int64_t N, int64_t C, int64_t HW, float eps, float* y) {
  const int64_t n = N * C * HW;
  if (n == 0) return;
  bn_forward_eval_kernel<<<launch_1d(n), kThreads>>>(x, gamma, beta, running_mean, running_var, N, C, HW, eps, y);
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_batch_norm_invstd(const float* running_var, int64_t C, double eps, float* invstd) {
  if (C == 0) return;
  bn_invstd_kernel<<<launch_1d(C), kThreads>>>(running_var, C, eps, invstd);
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_batch_norm_backward(const float* dy, const float* x, const float* gamma, const float* save_mean,
                                const float* save_invstd, int64_t N, int64_t C, int64_t HW, float* dx, float* dgamma,
                                float* dbeta) {
  if (C == 0) return;
  const int64_t M = N * HW, S = bn_slices(C, M);
  DeviceTemp p_dy(size_t(C * S) * sizeof(float)), p_dyx(size_t(C * S) * sizeof(float));
  bn_backward_sums_kernel<<<bn_grid(C, S), kThreads>>>(dy, x, save_mean, save_invstd, C, HW, M, p_dy.as<float>(),
                                                       p_dyx.as<float>());
  bn_backward_apply_kernel<<<bn_grid(C, S), kThreads>>>(dy, x, gamma, save_mean, save_invstd, C, HW, M,
                                                        p_dy.as<float>(), p_dyx.as<float>(), dx, dgamma, dbeta);
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
