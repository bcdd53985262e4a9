// Rung 08: rung 07 + cp.async double buffering (sm_80+). In rung 07 a warp copies a tile
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
// stays correct (just not overlapped), so the same binary runs F16 on every GPU of the build.
//
// Any M, N, K: as rung 07, the launcher zero-pads to multiples of 128, 128, BK (pad.cuh).
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/gemm/pad.cuh"
#include "cuda/gemm/wmma_format.cuh"
#include "cuda/runtime/check.h"

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

// Requires M % 128 == 0, N % 128 == 0, K % BK == 0.
// __launch_bounds__(256, 2): at most 128 registers a thread, so that two blocks share an SM
// (65,536 registers = 2 x 256 x 128; their 2 x 37,888 bytes of shared memory fit sm_80's and
// sm_90's). Asked only for 256 threads, ptxas took 130 registers (BF16 and TF32 on sm_90) and
// 148 (TF32 on sm_80): one block per SM, its 8 warps alone to hide the copies and the MMAs. Now
// the TF32 kernel spills 12 bytes (three values reloaded once per step along K).
// tests/gpu/kernel_facts.sh checks the counts. What it does to the time is not measured yet:
// `gemm_ladder --quick` on a GPU, rung 08 against rung 07 (chapter 05's table).
template <class T>
__global__ void __launch_bounds__(WmmaTiles<2>::kThreads, 2)
wmma_cp_async_kernel(int M, int N, int K, const T* A, const T* B, float* C) {
  using F = WmmaFormat<T>;
  using R = Rung07<sizeof(T)>;  // the same tiles and skew as rung 07
  if constexpr (F::kCompiled) {
    __shared__ __align__(32) T As[2][R::BM * R::A_LD];  // two buffers of (128, BK + skew)
    __shared__ __align__(32) T Bs[2][R::BK * R::B_LD];  // two buffers of (BK, 128 + skew)
    const int t = threadIdx.x, warp = t / 32;
    const int m0 = blockIdx.y * R::BM, n0 = blockIdx.x * R::BN;

    // Start the copies of the tiles at k0 into buffer `buf` (returns at once).
    auto load_tiles = [&](int buf, int k0) {
      for (int p = 0; p < R::kChunksPerThread; ++p) {
        const Coord a = rung07_a_chunk<sizeof(T)>(t, p);
        cp_async_16(&As[buf][smem_index(a.row, a.col, R::A_LD)], &A[gmem_offset(m0 + a.row, K, k0 + a.col)]);
        const Coord b = wmma_b_chunk<sizeof(T)>(t, p);
        cp_async_16(&Bs[buf][smem_index(b.row, b.col, R::B_LD)], &B[gmem_offset(k0 + b.row, N, n0 + b.col)]);
      }
    };

    FragC<T> acc[R::FM][R::FN];
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
      for (int kk = 0; kk < R::BK; kk += F::K) {
        FragA<T> a[R::FM];
        FragB<T> b[R::FN];
        for (int i = 0; i < R::FM; ++i) {
          wmma::load_matrix_sync(a[i], &As[buf][smem_index(wmma_fragment(warp, i, 0).row, kk, R::A_LD)], R::A_LD);
          F::round(a[i]);
        }
        for (int j = 0; j < R::FN; ++j) {
          wmma::load_matrix_sync(b[j], &Bs[buf][smem_index(kk, wmma_fragment(warp, 0, j).col, R::B_LD)], R::B_LD);
          F::round(b[j]);
        }
        for (int i = 0; i < R::FM; ++i)
          for (int j = 0; j < R::FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
      }
      __syncthreads();  // buffer `buf` is refilled by the prefetch of step kt + 2
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
void gemm_08_wmma_cp_async_double_buffered(int M, int N, int K, const T* A, const T* B, float* C) {
  using R = Rung07<sizeof(T)>;
  require_tensor_cores<T>("rung 08");
  with_zero_padding(M, N, K, R::BM, R::BN, R::BK, A, B, C, [](int Mp, int Np, int Kp, const T* a, const T* b, float* c) {
    const GridSize g = gemm_grid(Np / R::BN, Mp / R::BM, "rung 08");
    wmma_cp_async_kernel<T><<<dim3(g.x, g.y), R::kThreads>>>(Mp, Np, Kp, a, b, c);
    HG_CUDA_CHECK(cudaGetLastError());
  });
}

template void gemm_08_wmma_cp_async_double_buffered<__half>(int, int, int, const __half*, const __half*, float*);
template void gemm_08_wmma_cp_async_double_buffered<__nv_bfloat16>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*, float*);
template void gemm_08_wmma_cp_async_double_buffered<float>(int, int, int, const float*, const float*, float*);

}  // namespace hg::cuda::gemm
