// Softmax family (softmax.h). One warp per row (o, i): the lanes stride along the d elements
// of the row, and three warp reductions give the max, the sum of exponentials and (for the
// backward) the dot product. For the last dim (inner == 1) the lanes read consecutive
// addresses. Rows are independent, so there is no synchronisation beyond the warp.
#include "cuda/ops/kernel_common.cuh"
#include "cuda/ops/reduce.h"
#include "cuda/ops/softmax.h"
#include "cuda/runtime/memory.h"

#include <cmath>

namespace hg::cuda {

// Row `row` of (outer, d, inner): its element k is at base + k * inner.
struct Row {
  int64_t base, step;
};
__device__ __forceinline__ Row row_of(int64_t row, int64_t d, int64_t inner) {
  return {(row / inner) * d * inner + row % inner, inner};
}

template <class T>
__global__ void softmax_forward_kernel(const T* x, T* y, int64_t rows, int64_t d, int64_t inner, bool log) {
  const int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const Row r = row_of(row, d, inner);
  float m = -INFINITY;
  for (int64_t k = lane; k < d; k += 32) m = fmaxf(m, load(x, r.base + k * r.step));
  m = warp_max(m);
  float s = 0.0f;
  for (int64_t k = lane; k < d; k += 32) s += expf(load(x, r.base + k * r.step) - m);
  s = warp_sum(s);
  const float log_s = logf(s);
  for (int64_t k = lane; k < d; k += 32) {
    const float v = load(x, r.base + k * r.step) - m;
    store(y, r.base + k * r.step, log ? v - log_s : expf(v) / s);
  }
}

template <class T>
__global__ void softmax_backward_kernel(const T* y, const T* dy, T* dx, int64_t rows, int64_t d, int64_t inner, bool log) {
  const int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const Row r = row_of(row, d, inner);
  float dot = 0.0f;  // softmax: Σ dy·y;  log_softmax: Σ dy
  for (int64_t k = lane; k < d; k += 32) {
    const int64_t at = r.base + k * r.step;
    dot += log ? load(dy, at) : load(dy, at) * load(y, at);
  }
  dot = warp_sum(dot);
  for (int64_t k = lane; k < d; k += 32) {
    const int64_t at = r.base + k * r.step;
    const float yk = load(y, at), g = load(dy, at);
    store(dx, at, log ? g - expf(yk) * dot : yk * (g - dot));
  }
}

// loss_row[n] = log Σ_c e^(x_nc) − x_n,t_n  (F32), one warp per row.
template <class T>
__global__ void cross_entropy_rows_kernel(const T* x, const int32_t* t, int64_t N, int64_t C, float* loss_row) {
  const int64_t n = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (n >= N) return;
  float m = -INFINITY;
  for (int64_t c = lane; c < C; c += 32) m = fmaxf(m, load(x, n * C + c));
  m = warp_max(m);
  float s = 0.0f;
  for (int64_t c = lane; c < C; c += 32) s += expf(load(x, n * C + c) - m);
  s = warp_sum(s);
  if (lane == 0) {
    const int32_t target = t[n];
    // (m − x_t) + log s, in the CPU's order: m − x_t is exact-ish, m + log s would round log s
    loss_row[n] = (target < 0 || target >= C) ? NAN : (m - load(x, n * C + target)) + logf(s);
  }
}

template <class T>
__global__ void cross_entropy_backward_kernel(const T* x, const int32_t* t, const T* dloss, int64_t N, int64_t C, T* dx) {
  const int64_t n = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (n >= N) return;
  float m = -INFINITY;
  for (int64_t c = lane; c < C; c += 32) m = fmaxf(m, load(x, n * C + c));
  m = warp_max(m);
  float s = 0.0f;
  for (int64_t c = lane; c < C; c += 32) s += expf(load(x, n * C + c) - m);
  s = warp_sum(s);
  const float g = load(dloss, 0) / float(N);
  for (int64_t c = lane; c < C; c += 32) {
    const float p = expf(load(x, n * C + c) - m) / s;
    store(dx, n * C + c, g * (p - (c == t[n] ? 1.0f : 0.0f)));
  }
}

template <class T>
__global__ void cast_one_kernel(const float* from, T* to) { store(to, 0, from[0]); }

void launch_softmax_forward(DType dt, const void* x, void* y, int64_t outer, int64_t d, int64_t inner, bool log) {
  const int64_t rows = outer * inner;
  if (rows == 0 || d == 0) return;
  HG_DISPATCH(dt, T, softmax_forward_kernel<T><<<warp_blocks(rows), kThreads>>>(static_cast<const T*>(x), static_cast<T*>(y), rows, d, inner, log));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_softmax_backward(DType dt, const void* y, const void* dy, void* dx, int64_t outer, int64_t d, int64_t inner, bool log) {
  const int64_t rows = outer * inner;
  if (rows == 0 || d == 0) return;
  HG_DISPATCH(dt, T, softmax_backward_kernel<T><<<warp_blocks(rows), kThreads>>>(static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), rows, d, inner, log));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_cross_entropy_forward(DType dt, const void* logits, const int32_t* targets, int64_t N, int64_t C, void* loss) {
  if (N <= 0 || C <= 0) throw std::invalid_argument("cross_entropy_forward: empty logits (N or C is 0)");
  DeviceTemp rows(N * sizeof(float));  // (N) per-row losses, F32; freed even when a launch throws
  HG_DISPATCH(dt, T, cross_entropy_rows_kernel<T><<<warp_blocks(N), kThreads>>>(static_cast<const T*>(logits), targets, N, C, rows.as<float>()));
  HG_CUDA_CHECK(cudaGetLastError());
  // The mean over rows, F32 accumulation, rounded once to dt.
  if (dt == DType::F32) {
    launch_sum_all(DType::F32, rows.get(), N, loss, 1.0f / float(N));
  } else {
    DeviceTemp mean(sizeof(float));
    launch_sum_all(DType::F32, rows.get(), N, mean.get(), 1.0f / float(N));
    HG_DISPATCH(dt, T, cast_one_kernel<T><<<1, 1>>>(mean.as<float>(), static_cast<T*>(loss)));
    HG_CUDA_CHECK(cudaGetLastError());
  }
}

void launch_cross_entropy_backward(DType dt, const void* logits, const int32_t* targets, const void* dloss, int64_t N,
                                   int64_t C, void* dlogits) {
  if (N == 0) return;
  HG_DISPATCH(dt, T, cross_entropy_backward_kernel<T><<<warp_blocks(N), kThreads>>>(static_cast<const T*>(logits), targets, static_cast<const T*>(dloss), N, C, static_cast<T*>(dlogits)));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
