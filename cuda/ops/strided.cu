// Gather a strided view into row-major memory, and scatter row-major memory into a view
// (strided.h). One thread per row-major element: that side is coalesced; the view's side is
// as scattered as the view (a transpose reads a column per warp). Good enough for the
// occasional .contiguous(); the GEMMs avoid it by taking transposed operands directly.
#include "cuda/ops/kernel_common.cuh"
#include "cuda/ops/strided.h"

namespace hg::cuda {

template <class T>
__global__ void copy_strided_kernel(const T* x, StridedView view, T* y, int64_t n) {
  HG_GRID_STRIDE(i, n) y[i] = x[strided_offset(view, i)];  // a copy: no conversion, no rounding
}

template <class T>
__global__ void copy_into_strided_kernel(const T* x, T* y, StridedView view, int64_t n) {
  HG_GRID_STRIDE(i, n) y[strided_offset(view, i)] = x[i];
}

void launch_copy_strided(DType dt, const void* x, const StridedView& view, void* y, int64_t n) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, copy_strided_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<const T*>(x), view, static_cast<T*>(y), n));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_copy_into_strided(DType dt, const void* x, void* y, const StridedView& view, int64_t n) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, copy_into_strided_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<const T*>(x), static_cast<T*>(y), view, n));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
