// Layer norm (layernorm.h). Rows are independent, so the forward and dx need no
// synchronisation beyond a warp:
//   forward    layer_norm_forward_kernel        one warp per row: Σ(x − x0), Σ(d²), then y
//   backward   layer_norm_dx_kernel              one warp per row: Σg, Σg·x̂, then dx
//              layer_norm_param_partials_kernel  one thread per (row chunk, column)
//              layer_norm_param_sums_kernel      one thread per column: the chunks in order
#include "cuda/ops/kernel_common.cuh"
#include "cuda/ops/layernorm.h"
#include "cuda/runtime/memory.h"

namespace hg::cuda {

// x̂[r, c] exactly as the forward computed it (the same three operations on the same inputs).
template <class T>
__device__ __forceinline__ float xhat(const T* x, const float* mean_rel, const float* rstd, int64_t r, int64_t C,
                                      int64_t c) {
  return ((load(x, r * C + c) - load(x, r * C)) - mean_rel[r]) * rstd[r];
}

template <class T>
__global__ void layer_norm_forward_kernel(const T* x, const float* w, const float* b, int64_t R, int64_t C, float eps,
                                          T* y, float* mean_rel, float* rstd) {
  const int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (r >= R) return;  // the whole warp: r is the same in its 32 lanes
  const int64_t row = r * C;
  const float x0 = load(x, row);
  float s = 0.0f;
  for (int64_t c = lane; c < C; c += 32) s += load(x, row + c) - x0;
  const float mu = warp_sum(s) / float(C);  // μ' = mean of x − x0
  float ss = 0.0f;
  for (int64_t c = lane; c < C; c += 32) {
    const float d = (load(x, row + c) - x0) - mu;
    ss += d * d;
  }
  const float rs = 1.0f / sqrtf(warp_sum(ss) / float(C) + eps);
  for (int64_t c = lane; c < C; c += 32) store(y, row + c, ((load(x, row + c) - x0) - mu) * rs * w[c] + b[c]);
  if (lane == 0) {
    mean_rel[r] = mu;
    rstd[r] = rs;
  }
}

template <class T>
__global__ void layer_norm_dx_kernel(const T* x, const T* dy, const float* w, const float* mean_rel, const float* rstd,
                                     int64_t R, int64_t C, T* dx) {
  const int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (r >= R) return;
  float sum_g = 0.0f, sum_gx = 0.0f;  // Σ_c g and Σ_c g·x̂, g = dy ⊙ weight
  for (int64_t c = lane; c < C; c += 32) {
    const float g = load(dy, r * C + c) * w[c];
    sum_g += g;
    sum_gx += g * xhat(x, mean_rel, rstd, r, C, c);
  }
  const float mean_g = warp_sum(sum_g) / float(C), mean_gx = warp_sum(sum_gx) / float(C);
  for (int64_t c = lane; c < C; c += 32) {
    const float g = load(dy, r * C + c) * w[c];
    store(dx, r * C + c, rstd[r] * (g - mean_g - xhat(x, mean_rel, rstd, r, C, c) * mean_gx));
  }
}

// part_w[k, c] = Σ_{r in chunk k} dy[r, c]·x̂[r, c],  part_b[k, c] = Σ_{r in chunk k} dy[r, c]
// grid (chunks, column blocks): chunks ride on x (up to 2^31 − 1), columns on y.
template <class T>
__global__ void layer_norm_param_partials_kernel(const T* x, const T* dy, const float* mean_rel, const float* rstd,
                                                 int64_t R, int64_t C, float* part_w, float* part_b) {
  const int64_t k = blockIdx.x, c = blockIdx.y * int64_t(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  const int64_t first = k * kLnRowChunk, last = first + kLnRowChunk < R ? first + kLnRowChunk : R;
  float sw = 0.0f, sb = 0.0f;
  for (int64_t r = first; r < last; ++r) {
    const float g = load(dy, r * C + c);
    sw += g * xhat(x, mean_rel, rstd, r, C, c);
    sb += g;
  }
  part_w[k * C + c] = sw;
  part_b[k * C + c] = sb;
}

__global__ void layer_norm_param_sums_kernel(const float* part_w, const float* part_b, int64_t chunks, int64_t C,
                                             float* dw, float* db) {
  HG_GRID_STRIDE(c, C) {
    float sw = 0.0f, sb = 0.0f;
    for (int64_t k = 0; k < chunks; ++k) {  // chunk order: deterministic
      sw += part_w[k * C + c];
      sb += part_b[k * C + c];
    }
    if (dw) dw[c] = sw;
    if (db) db[c] = sb;
  }
}

void launch_layer_norm_forward(DType dt, const void* x, const float* weight, const float* bias, int64_t R, int64_t C,
                               float eps, void* y, float* mean_rel, float* rstd) {
  if (R == 0 || C == 0) return;
  HG_DISPATCH(dt, T, layer_norm_forward_kernel<T><<<warp_blocks(R), kThreads>>>(static_cast<const T*>(x), weight, bias, R, C, eps, static_cast<T*>(y), mean_rel, rstd));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_layer_norm_backward(DType dt, const void* x, const void* dy, const float* weight, const float* mean_rel,
                                const float* rstd, int64_t R, int64_t C, void* dx, float* dweight, float* dbias) {
  if (R == 0 || C == 0) return;
  if (dx) {
    HG_DISPATCH(dt, T, layer_norm_dx_kernel<T><<<warp_blocks(R), kThreads>>>(static_cast<const T*>(x), static_cast<const T*>(dy), weight, mean_rel, rstd, R, C, static_cast<T*>(dx)));
    HG_CUDA_CHECK(cudaGetLastError());
  }
  if (!dweight && !dbias) return;
  const int64_t chunks = (R + kLnRowChunk - 1) / kLnRowChunk;
  DeviceTemp part_w(size_t(chunks * C) * sizeof(float)), part_b(size_t(chunks * C) * sizeof(float));  // (chunks, C)
  const dim3 grid(unsigned(chunks), unsigned((C + kThreads - 1) / kThreads));
  HG_DISPATCH(dt, T, layer_norm_param_partials_kernel<T><<<grid, kThreads>>>(static_cast<const T*>(x), static_cast<const T*>(dy), mean_rel, rstd, R, C, part_w.as<float>(), part_b.as<float>()));
  HG_CUDA_CHECK(cudaGetLastError());
  layer_norm_param_sums_kernel<<<launch_1d(C), kThreads>>>(part_w.as<float>(), part_b.as<float>(), chunks, C, dweight, dbias);
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
