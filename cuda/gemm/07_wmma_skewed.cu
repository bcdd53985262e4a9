// Rung 07: rung 06 with skewed shared memory. In rung 06 a fragment load reads several rows
// of a tile at once, and the rows start in the same shared-memory banks (rows of A are 64
// bytes apart, rows of B 256 or 512): the loads are served in 4 or 8 passes instead of one.
//
// The skew: every row of the shared tiles is padded, A's by 16 bytes (8 halves, 4 floats) and
// B's by 8 elements, so that the rows a fragment load reads at once fall in different banks
// (layout.h, Rung07, explains the arithmetic; tests/unit/test_cuda_gemm_layout.cpp checks every
// access of this kernel for bank conflicts). The copy map of the A tile changes with it
// (rung07_a_chunk): walking the padded rows one after another would now conflict.
//
// Any M, N, K: the kernel needs M, N multiples of 128 and K of BK (whole tiles, 16-byte
// aligned rows); the launcher zero-pads (pad.cuh).
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/gemm/pad.cuh"
#include "cuda/gemm/wmma_format.cuh"
#include "cuda/runtime/check.h"

namespace hg::cuda::gemm {
using namespace nvcuda;

// Requires M % 128 == 0, N % 128 == 0, K % BK == 0.
template <class T>
__global__ void __launch_bounds__(WmmaTiles<2>::kThreads)
wmma_skewed_kernel(int M, int N, int K, const T* A, const T* B, float* C) {
  using F = WmmaFormat<T>;
  using R = Rung07<sizeof(T)>;
  if constexpr (F::kCompiled) {
    __shared__ __align__(32) T As[R::BM * R::A_LD];  // (128, BK + skew)
    __shared__ __align__(32) T Bs[R::BK * R::B_LD];  // (BK, 128 + skew)
    const int t = threadIdx.x, warp = t / 32;
    const int m0 = blockIdx.y * R::BM, n0 = blockIdx.x * R::BN;

    FragC<T> acc[R::FM][R::FN];
    for (int i = 0; i < R::FM; ++i)
      for (int j = 0; j < R::FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += R::BK) {
      for (int p = 0; p < R::kChunksPerThread; ++p) {  // 512 chunks of 16 bytes per tile, 2 per thread
        const Coord a = rung07_a_chunk<sizeof(T)>(t, p);
        *reinterpret_cast<uint4*>(&As[smem_index(a.row, a.col, R::A_LD)]) =
            *reinterpret_cast<const uint4*>(&A[gmem_offset(m0 + a.row, K, k0 + a.col)]);
        const Coord b = wmma_b_chunk<sizeof(T)>(t, p);
        *reinterpret_cast<uint4*>(&Bs[smem_index(b.row, b.col, R::B_LD)]) =
            *reinterpret_cast<const uint4*>(&B[gmem_offset(k0 + b.row, N, n0 + b.col)]);
      }
      __syncthreads();
      for (int kk = 0; kk < R::BK; kk += F::K) {
        FragA<T> a[R::FM];
        FragB<T> b[R::FN];
        for (int i = 0; i < R::FM; ++i) {
          wmma::load_matrix_sync(a[i], &As[smem_index(wmma_fragment(warp, i, 0).row, kk, R::A_LD)], R::A_LD);
          F::round(a[i]);
        }
        for (int j = 0; j < R::FN; ++j) {
          wmma::load_matrix_sync(b[j], &Bs[smem_index(kk, wmma_fragment(warp, 0, j).col, R::B_LD)], R::B_LD);
          F::round(b[j]);
        }
        for (int i = 0; i < R::FM; ++i)
          for (int j = 0; j < R::FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
      }
      __syncthreads();
    }
    for (int i = 0; i < R::FM; ++i)
      for (int j = 0; j < R::FN; ++j) {
        const Coord c = wmma_fragment(warp, i, j);
        wmma::store_matrix_sync(&C[gmem_offset(m0 + c.row, N, n0 + c.col)], acc[i][j], N, wmma::mem_row_major);
      }
  } else {
    __trap();  // BF16 / TF32 compiled for sm_75: the launcher refused already
  }
}

template <class T>
void gemm_07_wmma_skewed(int M, int N, int K, const T* A, const T* B, float* C) {
  using R = Rung07<sizeof(T)>;
  require_tensor_cores<T>("rung 07");
  with_zero_padding(M, N, K, R::BM, R::BN, R::BK, A, B, C, [](int Mp, int Np, int Kp, const T* a, const T* b, float* c) {
    const GridSize g = gemm_grid(Np / R::BN, Mp / R::BM, "rung 07");
    wmma_skewed_kernel<T><<<dim3(g.x, g.y), R::kThreads>>>(Mp, Np, Kp, a, b, c);
    HG_CUDA_CHECK(cudaGetLastError());
  });
}

template void gemm_07_wmma_skewed<__half>(int, int, int, const __half*, const __half*, float*);
template void gemm_07_wmma_skewed<__nv_bfloat16>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*, float*);
template void gemm_07_wmma_skewed<float>(int, int, int, const float*, const float*, float*);

}  // namespace hg::cuda::gemm
