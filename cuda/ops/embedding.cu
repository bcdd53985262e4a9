// Embedding (embedding.h): a gather forward, a grouped sum backward. One thread per output
// element in both, so the writes are coalesced; consecutive threads are consecutive columns
// of one row, so the reads of a row of the table (forward) or of dy (backward) are too.
#include "cuda/ops/embedding.h"
#include "cuda/ops/kernel_common.cuh"

namespace hg::cuda {

// y[p, c] = weight[ids[p], c]: a copy, no conversion.
template <class T>
__global__ void embedding_forward_kernel(const T* weight, const int32_t* ids, int64_t n, int64_t C, T* y) {
  HG_GRID_STRIDE(i, n * C) y[i] = weight[int64_t(ids[i / C]) * C + i % C];
}

// dw[v, c] = Σ over v's positions p (increasing) of dy[p, c], in F32, rounded once.
template <class T>
__global__ void embedding_backward_kernel(const T* dy, const int32_t* offsets, const int32_t* positions, int64_t V,
                                          int64_t C, T* dw) {
  HG_GRID_STRIDE(i, V * C) {
    const int64_t v = i / C, c = i % C;
    float acc = 0.0f;
    for (int32_t k = offsets[v]; k < offsets[v + 1]; ++k) acc += load(dy, int64_t(positions[k]) * C + c);
    store(dw, i, acc);
  }
}

void launch_embedding_forward(DType dt, const void* weight, const int32_t* ids, int64_t n, int64_t C, void* y) {
  if (n * C == 0) return;
  HG_DISPATCH(dt, T, embedding_forward_kernel<T><<<launch_1d(n * C), kThreads>>>(static_cast<const T*>(weight), ids, n, C, static_cast<T*>(y)));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_embedding_backward(DType dt, const void* dy, const int32_t* offsets, const int32_t* positions, int64_t V,
                               int64_t C, void* dw) {
  if (V * C == 0) return;
  HG_DISPATCH(dt, T, embedding_backward_kernel<T><<<launch_1d(V * C), kThreads>>>(static_cast<const T*>(dy), offsets, positions, V, C, static_cast<T*>(dw)));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
