// Rung 02: coalesced. The same arithmetic as rung 01; only the thread -> element map changes:
// threadIdx.x now walks the columns n (layout.h: coalesced_coord). A warp's 32 lanes read
// B[k][n0 .. n0+31], one 128-byte line, and all read the same A[m][k] (a broadcast); the
// stores to C[m][n0 .. n0+31] are one line too. Memory transactions per warp drop from 32 to 1.
//
// Any M, N, K: the grid is rounded up and threads outside C return (guarded).
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/runtime/check.h"

namespace hg::cuda::gemm {

__global__ void coalesced_kernel(int M, int N, int K, const float* A, const float* B, float* C) {
  const Coord c = coalesced_coord(blockIdx.x, blockIdx.y, threadIdx.x, threadIdx.y, blockDim.x, blockDim.y);
  if (c.row >= M || c.col >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += A[c.row * K + k] * B[k * N + c.col];
  C[c.row * N + c.col] = acc;
}

void gemm_02_coalesced(int M, int N, int K, const float* A, const float* B, float* C) {
  const dim3 block(32, 32);
  const dim3 grid(ceil_div(N, 32), ceil_div(M, 32));  // x covers columns, y covers rows
  coalesced_kernel<<<grid, block>>>(M, N, K, A, B, C);
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda::gemm
