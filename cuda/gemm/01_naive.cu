// Rung 01: naive. One thread per element of C; each thread walks K:
//
//     C[m][n] = sum_k A[m][k] * B[k][n]
//
// threadIdx.x is mapped to the row m (layout.h: naive_coord). That looks harmless and is the
// lesson of rung 02: the 32 lanes of a warp get 32 different rows, so their loads of A[m][k]
// hit 32 different cache lines, and their stores to C are 32 scattered writes.
//
// Any M, N, K: the grid is rounded up and threads outside C return (guarded).
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/runtime/check.h"

namespace hg::cuda::gemm {

__global__ void naive_kernel(int M, int N, int K, const float* A, const float* B, float* C) {
  const Coord c = naive_coord(blockIdx.x, blockIdx.y, threadIdx.x, threadIdx.y, blockDim.x, blockDim.y);
  if (c.row >= M || c.col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[c.row * K + k] * B[k * N + c.col];
  C[c.row * N + c.col] = acc;
}

void gemm_01_naive(int M, int N, int K, const float* A, const float* B, float* C) {
  const dim3 block(32, 32);
  const dim3 grid(ceil_div(M, 32), ceil_div(N, 32));  // x covers rows, y covers columns
  naive_kernel<<<grid, block>>>(M, N, K, A, B, C);
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda::gemm
