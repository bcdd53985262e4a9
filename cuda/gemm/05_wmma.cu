// Rung 05: WMMA, the tensor cores through CUDA's warp matrix API. One warp (one block of 32
// threads) computes one 16 x 16 tile of C. Along K, it loads a 16 x 16 fragment of A and one
// of B straight from global memory and issues one mma_sync, which the tensor cores execute as
//
//     acc (16x16, F32) += a (16x16, F16) · b (16x16, F16)
//
// with exact F16 x F16 products summed in F32. A fragment is spread over the 32 lanes' registers
// in a layout the hardware chooses and does not document: a warp loads, multiplies and stores
// fragments together (the _sync), and no lane may assume which elements it holds.
//
// This rung is the simplest correct use of the API, not a fast one: every warp fetches its
// operands from global memory, with no reuse between warps (compare rung 01).
//
// Any M, N, K: the kernel needs multiples of 16 (whole fragments, and load_matrix_sync wants
// leading dimensions that are multiples of 8 halves); the launcher zero-pads (pad.cuh).
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/gemm/pad.cuh"
#include "cuda/runtime/check.h"

#include <mma.h>

namespace hg::cuda::gemm {
using namespace nvcuda;

// Requires M, N, K multiples of 16.
__global__ void wmma_kernel(int M, int N, int K, const __half* A, const __half* B, float* C) {
  const Coord tile = rung05_tile(blockIdx.x, blockIdx.y);
  wmma::fragment<wmma::accumulator, kWmma, kWmma, kWmma, float> acc;
  wmma::fragment<wmma::matrix_a, kWmma, kWmma, kWmma, __half, wmma::row_major> a;
  wmma::fragment<wmma::matrix_b, kWmma, kWmma, kWmma, __half, wmma::row_major> b;
  wmma::fill_fragment(acc, 0.0f);
  for (int k = 0; k < K; k += kWmma) {
    wmma::load_matrix_sync(a, A + tile.row * K + k, K);    // A[row .. +16][k .. +16], leading dim K
    wmma::load_matrix_sync(b, B + k * N + tile.col, N);    // B[k .. +16][col .. +16], leading dim N
    wmma::mma_sync(acc, a, b, acc);
  }
  wmma::store_matrix_sync(C + tile.row * N + tile.col, acc, N, wmma::mem_row_major);
}

void gemm_05_wmma(int M, int N, int K, const __half* A, const __half* B, float* C) {
  with_zero_padding(M, N, K, kWmma, kWmma, kWmma, A, B, C,
                    [](int Mp, int Np, int Kp, const __half* a, const __half* b, float* c) {
                      const dim3 grid(Np / kWmma, Mp / kWmma);
                      wmma_kernel<<<grid, 32>>>(Mp, Np, Kp, a, b, c);
                      HG_CUDA_CHECK(cudaGetLastError());
                    });
}

}  // namespace hg::cuda::gemm
