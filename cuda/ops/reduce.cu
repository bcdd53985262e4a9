// Reductions (reduce.h). The classic two-pass sum: pass 1 runs a fixed number of blocks, each
// thread adding a strided slice of x into a register, each block reducing its threads'
// values with warp shuffles (block_sum) into one partial; pass 2 sums the partials in one
// block. No atomics, so the result is the same on every run (deterministic).
#include "cuda/ops/reduce.h"
#include "cuda/ops/kernel_common.cuh"
#include "cuda/runtime/memory.h"

#include <algorithm>

namespace hg::cuda {

constexpr int kSumBlocks = 1024;  // pass-1 blocks: plenty to fill any GPU's SMs

template <class T>
__global__ void partial_sums_kernel(const T* x, int64_t n, float* partial) {
  float acc = 0.0f;
  HG_GRID_STRIDE(i, n) acc += load(x, i);
  acc = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

template <class T>
__global__ void final_sum_kernel(const float* partial, int count, T* y, float scale) {
  float acc = 0.0f;
  for (int i = threadIdx.x; i < count; i += blockDim.x) acc += partial[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) store(y, 0, acc * scale);
}

// One warp per output (o, i): lanes take k = lane, lane + 32, ... and shuffle-reduce.
// For inner == 1 (the last dim) the lanes read consecutive addresses: coalesced.
template <class T>
__global__ void sum_dim_kernel(const T* x, int64_t outer, int64_t d, int64_t inner, T* y, float scale) {
  const int64_t out = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (out >= outer * inner) return;  // whole warps leave together: `out` is uniform in a warp
  const int64_t o = out / inner, i = out % inner;
  float acc = 0.0f;
  for (int64_t k = lane; k < d; k += 32) acc += load(x, (o * d + k) * inner + i);
  acc = warp_sum(acc);
  if (lane == 0) store(y, out, acc * scale);
}

template <class T>
__global__ void sum_dim_backward_kernel(const T* dy, int64_t outer, int64_t d, int64_t inner, T* dx, float scale) {
  HG_GRID_STRIDE(j, outer * d * inner) {
    const int64_t i = j % inner, o = j / (d * inner);
    store(dx, j, scale * load(dy, o * inner + i));
  }
}

void launch_sum_all(DType dt, const void* x, int64_t n, void* y, float scale) {
  const int blocks = static_cast<int>(n <= 0 ? 1 : std::min<int64_t>(kSumBlocks, (n + kThreads - 1) / kThreads));
  DeviceTemp partial(blocks * sizeof(float));  // freed at the closing brace, after the launches
  HG_DISPATCH(dt, T, {
    partial_sums_kernel<T><<<blocks, kThreads>>>(static_cast<const T*>(x), n, partial.as<float>());
    final_sum_kernel<T><<<1, 1024>>>(partial.as<float>(), blocks, static_cast<T*>(y), scale);
  });
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_sum_dim(DType dt, const void* x, int64_t outer, int64_t d, int64_t inner, void* y, float scale) {
  const int64_t warps = outer * inner;
  if (warps == 0) return;
  const unsigned blocks = static_cast<unsigned>((warps * 32 + kThreads - 1) / kThreads);
  HG_DISPATCH(dt, T, sum_dim_kernel<T><<<blocks, kThreads>>>(static_cast<const T*>(x), outer, d, inner, static_cast<T*>(y), scale));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_sum_dim_backward(DType dt, const void* dy, int64_t outer, int64_t d, int64_t inner, void* dx, float scale) {
  const int64_t n = outer * d * inner;
  if (n == 0) return;
  HG_DISPATCH(dt, T, sum_dim_backward_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<const T*>(dy), outer, d, inner, static_cast<T*>(dx), scale));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
