#pragma once
// What every op kernel file shares (nvcc only):
//   load<T>(p, i) / store<T>(p, i, v)   F16/BF16/F32 storage, F32 math, RNE on store
//   HG_DISPATCH(dtype, T, ...)          run the block with T = float, __half or __nv_bfloat16
//   launch_1d(n)                        grid size for one thread per element (grid-stride loops)
//   warp_blocks(rows)                   grid size for one warp per row (softmax, layer norm)
//   warp_sum / warp_max, block_sum      tree reductions with shuffles
#include "cuda/ops/dtype.h"
#include "cuda/runtime/check.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>

namespace hg::cuda {

template <class T> __device__ __forceinline__ float load(const T* p, int64_t i);
template <> __device__ __forceinline__ float load<float>(const float* p, int64_t i) { return p[i]; }
template <> __device__ __forceinline__ float load<__half>(const __half* p, int64_t i) { return __half2float(p[i]); }
template <> __device__ __forceinline__ float load<__nv_bfloat16>(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }

template <class T> __device__ __forceinline__ void store(T* p, int64_t i, float v);
template <> __device__ __forceinline__ void store<float>(float* p, int64_t i, float v) { p[i] = v; }
template <> __device__ __forceinline__ void store<__half>(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
template <> __device__ __forceinline__ void store<__nv_bfloat16>(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

// HG_DISPATCH(dt, T, { kernel<T><<<...>>>(...); }): the one place a DType becomes a C++ type
// on the GPU. F64 has no kernels: the framework refuses it first, so reaching it is a bug.
#define HG_DISPATCH(dt, T, ...)                                              \
  switch (dt) {                                                              \
    case ::hg::DType::F32: { using T = float; __VA_ARGS__; break; }          \
    case ::hg::DType::F16: { using T = __half; __VA_ARGS__; break; }         \
    case ::hg::DType::BF16: { using T = __nv_bfloat16; __VA_ARGS__; break; } \
    case ::hg::DType::F64: throw std::invalid_argument("no F64 kernels on the GPU"); \
  }

constexpr int kThreads = 256;

// Blocks for n elements with grid-stride loops: enough to fill the GPU, capped so the
// grid stays small for huge n (each thread then handles several elements).
inline unsigned launch_1d(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65535 ? 65535 : blocks));
}

// Blocks of kThreads for one warp (32 threads) per row: a kernel's warp w handles row w.
inline unsigned warp_blocks(int64_t rows) { return static_cast<unsigned>((rows * 32 + kThreads - 1) / kThreads); }

#define HG_GRID_STRIDE(i, n) \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

// Sum / max of v over the 32 lanes of a warp (butterfly: every lane gets the result).
__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}
// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_sum(v);
  __syncthreads();  // partial[] may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : 0.0f;
  return warp_sum(v);
}

}  // namespace hg::cuda
