// Elementwise kernels (elementwise.h). One thread per output element, grid-stride loops:
// the simplest kernel shape and, for memory-bound work like this, already close to the
// bandwidth limit, because consecutive threads touch consecutive addresses (coalesced).
#include "cuda/ops/elementwise.h"
#include "cuda/ops/kernel_common.cuh"

namespace hg::cuda {

__device__ __forceinline__ float apply(Binary op, float a, float b) {
  switch (op) {
    case Binary::Add: return a + b;
    case Binary::Sub: return a - b;
    case Binary::Mul: return a * b;
    case Binary::Div: return a / b;
  }
  return 0.0f;
}

template <class T>
__global__ void binary_kernel(Binary op, const T* a, const T* b, T* y, Broadcast bc, int64_t n) {
  HG_GRID_STRIDE(i, n) {
    int64_t ia, ib;
    broadcast_offsets(bc, i, ia, ib);
    store(y, i, apply(op, load(a, ia), load(b, ib)));
  }
}

template <class T>
__global__ void binary_scalar_kernel(Binary op, const T* a, float s, T* y, int64_t n, bool scalar_first) {
  HG_GRID_STRIDE(i, n) {
    const float v = load(a, i);
    store(y, i, scalar_first ? apply(op, s, v) : apply(op, v, s));
  }
}

// Block j sums the output elements that read target element j. The output positions are the
// target's own multi-index (dims with stride != 0) combined with every index along the
// broadcast dims (stride 0); thread r walks the broadcast positions r, r + blockDim, ...
template <class T>
__global__ void sum_to_kernel(const T* g, Broadcast bc, T* target, int64_t target_numel) {
  int64_t kept[kMaxDims];  // target element j's index along each kept dim
  int64_t reduced = 1;     // number of output elements per target element
  int64_t j = blockIdx.x;
  for (int k = bc.ndim - 1; k >= 0; --k) {
    if (bc.a_stride[k] != 0) {
      kept[k] = j % bc.out_shape[k];
      j /= bc.out_shape[k];
    } else {
      kept[k] = -1;
      reduced *= bc.out_shape[k];
    }
  }
  float acc = 0.0f;
  for (int64_t r = threadIdx.x; r < reduced; r += blockDim.x) {
    int64_t rr = r, offset = 0, out_stride = 1;
    for (int k = bc.ndim - 1; k >= 0; --k) {
      int64_t idx;
      if (kept[k] >= 0) idx = kept[k];
      else { idx = rr % bc.out_shape[k]; rr /= bc.out_shape[k]; }
      offset += idx * out_stride;
      out_stride *= bc.out_shape[k];
    }
    acc += load(g, offset);
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) store(target, blockIdx.x, acc);
}

template <class T>
__global__ void axpy_kernel(T* dst, const T* src, float alpha, int64_t n) {
  HG_GRID_STRIDE(i, n) store(dst, i, load(dst, i) + alpha * load(src, i));
}
template <class T>
__global__ void scale_kernel(T* x, float s, int64_t n) {
  HG_GRID_STRIDE(i, n) store(x, i, load(x, i) * s);
}
template <class From, class To>
__global__ void cast_kernel(const From* x, To* y, int64_t n) {
  HG_GRID_STRIDE(i, n) store(y, i, load(x, i));
}

void launch_binary(Binary op, DType dt, const void* a, const void* b, void* y, const Broadcast& bc) {
  const int64_t n = bc.numel();
  if (n == 0) return;
  HG_DISPATCH(dt, T, binary_kernel<T><<<launch_1d(n), kThreads>>>(op, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(y), bc, n));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_binary_scalar(Binary op, DType dt, const void* a, float s, void* y, int64_t n, bool scalar_first) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, binary_scalar_kernel<T><<<launch_1d(n), kThreads>>>(op, static_cast<const T*>(a), s, static_cast<T*>(y), n, scalar_first));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_sum_to(DType dt, const void* g, const Broadcast& bc, void* target, int64_t target_numel) {
  if (target_numel == 0) return;
  if (target_numel > 0x7fffffff) throw std::invalid_argument("sum_to: more than 2^31 - 1 target elements");
  const int64_t reduced = bc.numel() / target_numel;
  const int threads = reduced >= 256 ? 256 : (reduced >= 64 ? 64 : 32);
  HG_DISPATCH(dt, T, sum_to_kernel<T><<<unsigned(target_numel), threads>>>(static_cast<const T*>(g), bc, static_cast<T*>(target), target_numel));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_axpy(DType dt, void* dst, const void* src, float alpha, int64_t n) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, axpy_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<T*>(dst), static_cast<const T*>(src), alpha, n));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_scale(DType dt, void* x, float s, int64_t n) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, scale_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<T*>(x), s, n));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_cast(DType from, const void* x, DType to, void* y, int64_t n) {
  if (n == 0) return;
  HG_DISPATCH(from, F, HG_DISPATCH(to, T, cast_kernel<F, T><<<launch_1d(n), kThreads>>>(static_cast<const F*>(x), static_cast<T*>(y), n)));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
