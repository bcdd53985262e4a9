// Rung 04: 2D register blocking. In rung 03 each multiply-add needs two shared-memory loads,
// and shared memory, not arithmetic, sets the pace. Here a block of 256 threads computes a
// 128 x 128 tile of C and each thread computes 8 x 8 outputs, kept in registers. For each k
// of a BK = 8 slice, a thread loads a column of 8 values of A and a row of 8 values of B into
// registers and forms their outer product: 64 multiply-adds for 16 loads (rung 03: 1 for 2).
//
//   thread t owns rows t/16 + 16i and columns t%16 + 16j (i, j = 0..7) of the tile:
//   strided, so that 16 neighbouring lanes read 16 consecutive words of Bs (no bank conflict)
//   and store 16 consecutive floats of C (layout.h: rung04_output).
//
// Any M, N, K: tile elements outside A or B are stored as 0, outputs outside C are not stored.
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/runtime/check.h"

namespace hg::cuda::gemm {

__global__ void __launch_bounds__(Rung04::kThreads)
register_blocked_kernel(int M, int N, int K, const float* A, const float* B, float* C) {
  constexpr int BM = Rung04::BM, BN = Rung04::BN, BK = Rung04::BK, TM = Rung04::TM, TN = Rung04::TN;
  __shared__ float As[BM][BK];  // (128 rows of A, 8 along K)
  __shared__ float Bs[BK][BN];  // (8 along K, 128 columns of B)
  const int t = threadIdx.x;
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

  float acc[TM][TN] = {};  // this thread's 8 x 8 outputs
  float a_reg[TM], b_reg[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    // Copy the tiles: 1024 elements each, 4 per thread (consecutive threads, consecutive addresses).
    for (int p = 0; p < BM * BK / Rung04::kThreads; ++p) {
      const Coord a = rung04_a_load(t, p);
      const int gm = m0 + a.row, gk = k0 + a.col;
      As[a.row][a.col] = (gm < M && gk < K) ? A[gm * K + gk] : 0.0f;
    }
    for (int p = 0; p < BK * BN / Rung04::kThreads; ++p) {
      const Coord b = rung04_b_load(t, p);
      const int gk = k0 + b.row, gn = n0 + b.col;
      Bs[b.row][b.col] = (gk < K && gn < N) ? B[gk * N + gn] : 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < BK; ++k) {
      for (int i = 0; i < TM; ++i) a_reg[i] = As[rung04_output(t, i, 0).row][k];
      for (int j = 0; j < TN; ++j) b_reg[j] = Bs[k][rung04_output(t, 0, j).col];
      for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j) acc[i][j] += a_reg[i] * b_reg[j];  // outer product
    }
    __syncthreads();
  }
  for (int i = 0; i < TM; ++i)
    for (int j = 0; j < TN; ++j) {
      const Coord c = rung04_output(t, i, j);
      const int gm = m0 + c.row, gn = n0 + c.col;
      if (gm < M && gn < N) C[gm * N + gn] = acc[i][j];
    }
}

void gemm_04_register_blocked(int M, int N, int K, const float* A, const float* B, float* C) {
  const dim3 grid(ceil_div(N, Rung04::BN), ceil_div(M, Rung04::BM));
  register_blocked_kernel<<<grid, Rung04::kThreads>>>(M, N, K, A, B, C);
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda::gemm
