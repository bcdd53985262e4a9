// Rung 03: shared-memory tiling. Rung 02 reads every element of A and B from global memory
// once per output that uses it: 2K loads per output. Here a block of 32 x 32 threads computes
// a 32 x 32 tile of C. At each step s along K, the block copies one 32 x 32 tile of A and one of
// B into shared memory (each thread copies one element of each, coalesced), waits, and then
// every thread does 32 multiply-adds from shared memory. Global loads drop 32-fold.
//
//   As[ty][k]: all lanes of a warp share ty, so they read one word (broadcast);
//   Bs[k][tx]: 32 consecutive words, 32 different banks: no conflict.
//
// Any M, N, K: elements of a tile that fall outside A or B are stored as 0 (they add exact
// zeros to the sum), and threads outside C do not store (guarded).
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/runtime/check.h"

namespace hg::cuda::gemm {

__global__ void shared_tiled_kernel(int M, int N, int K, const float* A, const float* B, float* C) {
  constexpr int T = kTile03;
  __shared__ float As[T][T];  // (T rows of A, T along K)
  __shared__ float Bs[T][T];  // (T along K, T columns of B)
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;

  float acc = 0.0f;
  for (int s = 0; s < ceil_div(K, T); ++s) {
    const Coord a = tiled_a_element(blockIdx.y, s, ty, tx);
    const Coord b = tiled_b_element(blockIdx.x, s, ty, tx);
    As[ty][tx] = (a.row < M && a.col < K) ? A[a.row * K + a.col] : 0.0f;
    Bs[ty][tx] = (b.row < K && b.col < N) ? B[b.row * N + b.col] : 0.0f;
    __syncthreads();  // the whole tile is in shared memory before anyone reads it
    for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();  // everyone is done with the tile before it is overwritten
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

void gemm_03_shared_tiled(int M, int N, int K, const float* A, const float* B, float* C) {
  const dim3 block(kTile03, kTile03);
  const dim3 grid(ceil_div(N, kTile03), ceil_div(M, kTile03));
  shared_tiled_kernel<<<grid, block>>>(M, N, K, A, B, C);
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda::gemm
