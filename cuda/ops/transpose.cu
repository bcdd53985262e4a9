// Transpose through a shared-memory tile: a block reads a 32 x 32 tile of x row by row
// (coalesced), and writes it to y row by row of the *transposed* tile (coalesced too). The
// tile is 32 x 33: the extra column shifts each row by one bank, so reading a column of the
// tile (32 lanes, stride 33 words) hits 32 different banks instead of one.
#include "cuda/ops/kernel_common.cuh"
#include "cuda/ops/transpose.h"

namespace hg::cuda {

constexpr int kT = 32;

template <class T>
__global__ void transpose_kernel(const T* x, int64_t rows, int64_t cols, T* y) {
  __shared__ float tile[kT][kT + 1];
  const int64_t c0 = int64_t(blockIdx.x) * kT;
  // grid.y is capped at 65535: a tall x (millions of rows) is walked in a grid-stride loop.
  for (int64_t r0 = int64_t(blockIdx.y) * kT; r0 < rows; r0 += int64_t(gridDim.y) * kT) {
    for (int i = threadIdx.y; i < kT; i += blockDim.y) {  // blockDim = (32, 8): 4 rows per thread
      const int64_t r = r0 + i, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[i][threadIdx.x] = load(x, r * cols + c);
    }
    __syncthreads();
    for (int i = threadIdx.y; i < kT; i += blockDim.y) {
      const int64_t r = c0 + i, c = r0 + threadIdx.x;  // y is (cols, rows)
      if (r < cols && c < rows) store(y, r * rows + c, tile[threadIdx.x][i]);
    }
    __syncthreads();  // the tile is overwritten by the next step of the loop
  }
}

void launch_transpose(DType dt, const void* x, int64_t rows, int64_t cols, void* y) {
  if (rows == 0 || cols == 0) return;
  const int64_t row_tiles = (rows + kT - 1) / kT;
  const dim3 grid(unsigned((cols + kT - 1) / kT), unsigned(row_tiles < 65535 ? row_tiles : 65535)), block(kT, 8);
  HG_DISPATCH(dt, T, transpose_kernel<T><<<grid, block>>>(static_cast<const T*>(x), rows, cols, static_cast<T*>(y)));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
