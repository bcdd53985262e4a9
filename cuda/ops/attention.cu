// The causal mask and the causal softmax (attention.h).
#include "cuda/ops/attention.h"
#include "cuda/ops/kernel_common.cuh"

#include <cmath>

namespace hg::cuda {

// S: the storage type (float, __half, __nv_bfloat16), T: the positions.

// One thread per element; element k of row r is key j = k % T of query i = r % T.
template <class S>
__global__ void causal_mask_kernel(const S* x, S* y, int64_t n, int64_t T, float above) {
  HG_GRID_STRIDE(k, n) {
    const int64_t j = k % T, i = (k / T) % T;
    if (j <= i) y[k] = x[k];  // a copy, no rounding
    else store(y, k, above);
  }
}

template <class S>
__global__ void causal_softmax_forward_kernel(const S* x, S* y, int64_t rows, int64_t T, float scale) {
  const int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;  // the whole warp
  const int64_t i = r % T, base = r * T;
  float m = -INFINITY;
  for (int64_t j = lane; j <= i; j += 32) m = fmaxf(m, scale * load(x, base + j));
  m = warp_max(m);
  float sum = 0.0f;
  for (int64_t j = lane; j <= i; j += 32) sum += expf(scale * load(x, base + j) - m);
  const float inv = 1.0f / warp_sum(sum);
  for (int64_t j = lane; j < T; j += 32) store(y, base + j, j <= i ? expf(scale * load(x, base + j) - m) * inv : 0.0f);
}

template <class S>
__global__ void causal_softmax_backward_kernel(const S* y, const S* dy, S* dx, int64_t rows, int64_t T, float scale) {
  const int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const int64_t i = r % T, base = r * T;
  float dot = 0.0f;  // Σ_{k≤i} dy·y
  for (int64_t j = lane; j <= i; j += 32) dot += load(dy, base + j) * load(y, base + j);
  dot = warp_sum(dot);
  for (int64_t j = lane; j < T; j += 32)
    store(dx, base + j, j <= i ? scale * load(y, base + j) * (load(dy, base + j) - dot) : 0.0f);
}

void launch_causal_mask(DType dt, const void* x, void* y, int64_t rows, int64_t T, float above) {
  const int64_t n = rows * T;
  if (n == 0) return;
  HG_DISPATCH(dt, S, causal_mask_kernel<S><<<launch_1d(n), kThreads>>>(static_cast<const S*>(x), static_cast<S*>(y), n, T, above));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_causal_softmax_forward(DType dt, const void* x, void* y, int64_t rows, int64_t T, float scale) {
  if (rows == 0 || T == 0) return;
  HG_DISPATCH(dt, S, causal_softmax_forward_kernel<S><<<warp_blocks(rows), kThreads>>>(static_cast<const S*>(x), static_cast<S*>(y), rows, T, scale));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_causal_softmax_backward(DType dt, const void* y, const void* dy, void* dx, int64_t rows, int64_t T,
                                    float scale) {
  if (rows == 0 || T == 0) return;
  HG_DISPATCH(dt, S, causal_softmax_backward_kernel<S><<<warp_blocks(rows), kThreads>>>(static_cast<const S*>(y), static_cast<const S*>(dy), static_cast<S*>(dx), rows, T, scale));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
