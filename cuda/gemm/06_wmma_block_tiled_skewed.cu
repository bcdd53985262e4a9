// Rung 06: WMMA with block tiling and skewed shared memory. Rung 05 reuses nothing: each warp
// loads its own fragments from global memory. Here a block of 8 warps computes a 128 x 128
// tile of C. At each step of BK = 32 along K the block copies a 128 x 32 tile of A and a
// 32 x 128 tile of B into shared memory (16 bytes per copy, coalesced); then each warp
// loads its 4 A fragments and 2 B fragments from shared memory and issues 4 x 2 x 2 = 16
// mma_sync. Each element brought from global memory now feeds 128 multiply-adds.
//
// The skew: every row of the shared tiles is padded by SKEW = 8 halves, so that the eight
// 16-byte rows ldmatrix reads per phase fall in eight different bank groups (layout.h explains
// the arithmetic; tests/unit/test_cuda_gemm_layout.cpp checks every access of this kernel for
// bank conflicts). The copy map (rung06_a_chunk) is chosen to be conflict-free too.
//
// Any M, N, K: the kernel needs M, N multiples of 128 and K of 32 (whole tiles, 16-byte
// aligned rows); the launcher zero-pads (pad.cuh).
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/gemm/pad.cuh"
#include "cuda/runtime/check.h"

#include <mma.h>

namespace hg::cuda::gemm {
using namespace nvcuda;

// Requires M % 128 == 0, N % 128 == 0, K % 32 == 0.
__global__ void __launch_bounds__(Rung06::kThreads)
wmma_block_tiled_skewed_kernel(int M, int N, int K, const __half* A, const __half* B, float* C) {
  using R = Rung06;
  __shared__ __align__(32) __half As[R::BM * R::A_LD];  // (128, 32 + skew)
  __shared__ __align__(32) __half Bs[R::BK * R::B_LD];  // (32, 128 + skew)
  const int t = threadIdx.x, warp = t / 32;
  const int m0 = blockIdx.y * R::BM, n0 = blockIdx.x * R::BN;

  wmma::fragment<wmma::accumulator, kWmma, kWmma, kWmma, float> acc[R::FM][R::FN];
  for (int i = 0; i < R::FM; ++i)
    for (int j = 0; j < R::FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < K; k0 += R::BK) {
    for (int p = 0; p < 2; ++p) {  // 512 chunks of 8 halves per tile, 2 per thread
      const Coord a = rung06_a_chunk(t, p);
      *reinterpret_cast<uint4*>(&As[smem_index(a.row, a.col, R::A_LD)]) =
          *reinterpret_cast<const uint4*>(&A[(m0 + a.row) * K + k0 + a.col]);
      const Coord b = rung06_b_chunk(t, p);
      *reinterpret_cast<uint4*>(&Bs[smem_index(b.row, b.col, R::B_LD)]) =
          *reinterpret_cast<const uint4*>(&B[(k0 + b.row) * N + n0 + b.col]);
    }
    __syncthreads();
    for (int kk = 0; kk < R::BK; kk += kWmma) {
      wmma::fragment<wmma::matrix_a, kWmma, kWmma, kWmma, __half, wmma::row_major> a[R::FM];
      wmma::fragment<wmma::matrix_b, kWmma, kWmma, kWmma, __half, wmma::row_major> b[R::FN];
      for (int i = 0; i < R::FM; ++i)
        wmma::load_matrix_sync(a[i], &As[smem_index(rung06_fragment(warp, i, 0).row, kk, R::A_LD)], R::A_LD);
      for (int j = 0; j < R::FN; ++j)
        wmma::load_matrix_sync(b[j], &Bs[smem_index(kk, rung06_fragment(warp, 0, j).col, R::B_LD)], R::B_LD);
      for (int i = 0; i < R::FM; ++i)
        for (int j = 0; j < R::FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < R::FM; ++i)
    for (int j = 0; j < R::FN; ++j) {
      const Coord c = rung06_fragment(warp, i, j);
      wmma::store_matrix_sync(&C[(m0 + c.row) * N + n0 + c.col], acc[i][j], N, wmma::mem_row_major);
    }
}

void gemm_06_wmma_block_tiled_skewed(int M, int N, int K, const __half* A, const __half* B, float* C) {
  with_zero_padding(M, N, K, Rung06::BM, Rung06::BN, Rung06::BK, A, B, C,
                    [](int Mp, int Np, int Kp, const __half* a, const __half* b, float* c) {
                      const dim3 grid(Np / Rung06::BN, Mp / Rung06::BM);
                      wmma_block_tiled_skewed_kernel<<<grid, Rung06::kThreads>>>(Mp, Np, Kp, a, b, c);
                      HG_CUDA_CHECK(cudaGetLastError());
                    });
}

}  // namespace hg::cuda::gemm
