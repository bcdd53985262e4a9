// Unscale-and-check, check-only and the largest finite |x| over a gradient buffer (amp.h). One grid-stride pass:
// each thread remembers whether it saw a non-finite value, the warp votes, and one lane per
// warp writes the flag — at most one global write per warp instead of one per element.
#include "cuda/ops/amp.h"
#include "cuda/ops/kernel_common.cuh"

namespace hg::cuda {

template <class T>
__global__ void unscale_and_check_kernel(T* g, int64_t n, float inv_scale, int* found_inf) {
  bool bad = false;
  HG_GRID_STRIDE(i, n) {
    const float v = load(g, i);
    bad |= !isfinite(v);
    store(g, i, v * inv_scale);  // inf stays inf, NaN stays NaN
  }
  if (__any_sync(0xffffffffu, bad) && threadIdx.x % 32 == 0) *found_inf = 1;
}

template <class T>
__global__ void check_finite_kernel(const T* x, int64_t n, int* found_inf) {
  bool bad = false;
  HG_GRID_STRIDE(i, n) bad |= !isfinite(load(x, i));
  if (__any_sync(0xffffffffu, bad) && threadIdx.x % 32 == 0) *found_inf = 1;
}

template <class T>
__global__ void max_abs_finite_kernel(const T* x, int64_t n, float* max_abs) {
  float m = 0.0f;
  HG_GRID_STRIDE(i, n) {
    const float a = fabsf(load(x, i));
    if (isfinite(a)) m = fmaxf(m, a);
  }
  m = warp_max(m);
  if (threadIdx.x % 32 == 0) atomicMax(reinterpret_cast<int*>(max_abs), __float_as_int(m));
}

void launch_unscale_and_check(DType dt, void* grad, int64_t n, float inv_scale, int* found_inf) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, unscale_and_check_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<T*>(grad), n, inv_scale, found_inf));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_check_finite(DType dt, const void* x, int64_t n, int* found_inf) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, check_finite_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<const T*>(x), n, found_inf));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_max_abs_finite(DType dt, const void* x, int64_t n, float* max_abs) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, max_abs_finite_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<const T*>(x), n, max_abs));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
