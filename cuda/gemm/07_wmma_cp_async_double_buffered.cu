// Rung 07: rung 06 + cp.async double buffering (sm_80+). In rung 06 a warp copies a tile
// (global -> registers -> shared), waits at the barrier, computes, waits again: while tiles
// move, the tensor cores idle. Here shared memory holds two copies of the tiles. While the
// warps compute on buffer kt % 2, the copies of step kt + 1 are already in flight into the
// other buffer. cp.async (sm_80+) copies 16 bytes global -> shared without passing through
// registers and without blocking the thread:
//
//   cp.async.cg.shared.global [dst], [src], 16   start a copy
//   cp.async.commit_group                        close the group of copies issued so far
//   cp.async.wait_group N                        wait until at most N groups are still in flight
//
// Timeline (one block):   load 0 | load 1, compute 0 | load 2, compute 1 | ... | compute last
//
// Compiled for sm_75 the three helpers fall back to a plain 16-byte copy and no-ops: the kernel
// stays correct (just not overlapped), so the same binary runs on every GPU of the build.
//
// Any M, N, K: as rung 06, the launcher zero-pads to multiples of 128, 128, 32 (pad.cuh).
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/gemm/pad.cuh"
#include "cuda/runtime/check.h"

#include <mma.h>

namespace hg::cuda::gemm {
using namespace nvcuda;

__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(gmem_src));
#else
  *reinterpret_cast<uint4*>(smem_dst) = *reinterpret_cast<const uint4*>(gmem_src);
#endif
}
__device__ __forceinline__ void cp_async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

// Requires M % 128 == 0, N % 128 == 0, K % 32 == 0.
__global__ void __launch_bounds__(Rung06::kThreads)
wmma_cp_async_kernel(int M, int N, int K, const __half* A, const __half* B, float* C) {
  using R = Rung06;  // the same tiles and skew as rung 06
  __shared__ __align__(32) __half As[2][R::BM * R::A_LD];  // two buffers of (128, 32 + skew)
  __shared__ __align__(32) __half Bs[2][R::BK * R::B_LD];  // two buffers of (32, 128 + skew)
  const int t = threadIdx.x, warp = t / 32;
  const int m0 = blockIdx.y * R::BM, n0 = blockIdx.x * R::BN;

  // Start the copies of the tiles at k0 into buffer `buf` (returns at once).
  auto load_tiles = [&](int buf, int k0) {
    for (int p = 0; p < 2; ++p) {
      const Coord a = rung06_a_chunk(t, p);
      cp_async_16(&As[buf][smem_index(a.row, a.col, R::A_LD)], &A[(m0 + a.row) * K + k0 + a.col]);
      const Coord b = rung06_b_chunk(t, p);
      cp_async_16(&Bs[buf][smem_index(b.row, b.col, R::B_LD)], &B[(k0 + b.row) * N + n0 + b.col]);
    }
  };

  wmma::fragment<wmma::accumulator, kWmma, kWmma, kWmma, float> acc[R::FM][R::FN];
  for (int i = 0; i < R::FM; ++i)
    for (int j = 0; j < R::FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  const int steps = K / R::BK;
  load_tiles(0, 0);
  cp_async_commit();
  for (int kt = 0; kt < steps; ++kt) {
    const int buf = kt % 2;
    if (kt + 1 < steps) load_tiles(1 - buf, (kt + 1) * R::BK);  // prefetch the next step
    cp_async_commit();    // (an empty group on the last step keeps the counting uniform)
    cp_async_wait<1>();   // all groups but the newest are done: buffer `buf` has arrived
    __syncthreads();      // ... for every thread's copies, not just this thread's
    for (int kk = 0; kk < R::BK; kk += kWmma) {
      wmma::fragment<wmma::matrix_a, kWmma, kWmma, kWmma, __half, wmma::row_major> a[R::FM];
      wmma::fragment<wmma::matrix_b, kWmma, kWmma, kWmma, __half, wmma::row_major> b[R::FN];
      for (int i = 0; i < R::FM; ++i)
        wmma::load_matrix_sync(a[i], &As[buf][smem_index(rung06_fragment(warp, i, 0).row, kk, R::A_LD)], R::A_LD);
      for (int j = 0; j < R::FN; ++j)
        wmma::load_matrix_sync(b[j], &Bs[buf][smem_index(kk, rung06_fragment(warp, 0, j).col, R::B_LD)], R::B_LD);
      for (int i = 0; i < R::FM; ++i)
        for (int j = 0; j < R::FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // buffer `buf` is refilled by the prefetch of step kt + 2
  }
  for (int i = 0; i < R::FM; ++i)
    for (int j = 0; j < R::FN; ++j) {
      const Coord c = rung06_fragment(warp, i, j);
      wmma::store_matrix_sync(&C[(m0 + c.row) * N + n0 + c.col], acc[i][j], N, wmma::mem_row_major);
    }
}

void gemm_07_wmma_cp_async_double_buffered(int M, int N, int K, const __half* A, const __half* B, float* C) {
  with_zero_padding(M, N, K, Rung06::BM, Rung06::BN, Rung06::BK, A, B, C,
                    [](int Mp, int Np, int Kp, const __half* a, const __half* b, float* c) {
                      const dim3 grid(Np / Rung06::BN, Mp / Rung06::BM);
                      wmma_cp_async_kernel<<<grid, Rung06::kThreads>>>(Mp, Np, Kp, a, b, c);
                      HG_CUDA_CHECK(cudaGetLastError());
                    });
}

}  // namespace hg::cuda::gemm
