// Rung 05: WMMA, the tensor cores through CUDA's warp matrix API. The ladder starts over here,
// as it did at rung 01: one warp (one block of 32 threads) computes one 16 x 16 tile of C.
// Along K, it loads a fragment of A and one of B straight from global memory and issues one
// mma_sync, which the tensor cores execute as
//
//     acc (16x16, F32) += a (16xFK) · b (FKx16)      FK = 16 (F16, BF16) or 8 (TF32)
//
// with exact products summed in F32 (cuda/gemm/wmma_format.cuh: what each input format does
// before the multiply). A fragment is spread over the 32 lanes' registers in a layout the
// hardware chooses and does not document: a warp loads, multiplies and stores fragments
// together (the _sync), and no lane may assume which elements it holds.
//
// This rung is the simplest correct use of the API, not a fast one: every warp fetches its
// operands from global memory, with no reuse between warps (compare rung 01).
//
// Any M, N, K: the kernel needs multiples of 16 (whole fragments, and load_matrix_sync wants
// leading dimensions that are multiples of 16 bytes); the launcher zero-pads (pad.cuh).
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/gemm/pad.cuh"
#include "cuda/gemm/wmma_format.cuh"
#include "cuda/runtime/check.h"

namespace hg::cuda::gemm {
using namespace nvcuda;

// Requires M, N, K multiples of 16.
template <class T>
__global__ void wmma_kernel(int M, int N, int K, const T* A, const T* B, float* C) {
  using F = WmmaFormat<T>;
  if constexpr (F::kCompiled) {
    const Coord tile = rung05_tile(blockIdx.x, blockIdx.y);
    FragC<T> acc;
    FragA<T> a;
    FragB<T> b;
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += F::K) {
      wmma::load_matrix_sync(a, A + gmem_offset(tile.row, K, k), K);  // A[row .. +16][k .. +FK], leading dim K
      wmma::load_matrix_sync(b, B + gmem_offset(k, N, tile.col), N);  // B[k .. +FK][col .. +16], leading dim N
      F::round(a);
      F::round(b);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(C + gmem_offset(tile.row, N, tile.col), acc, N, wmma::mem_row_major);
  } else {
    __trap();  // BF16 / TF32 compiled for sm_75: the launcher refused already
  }
}

template <class T>
void gemm_05_wmma(int M, int N, int K, const T* A, const T* B, float* C) {
  require_tensor_cores<T>("rung 05");
  with_zero_padding(M, N, K, kWmma, kWmma, kWmma, A, B, C, [](int Mp, int Np, int Kp, const T* a, const T* b, float* c) {
    const GridSize g = gemm_grid(Np / kWmma, Mp / kWmma, "rung 05");
    wmma_kernel<T><<<dim3(g.x, g.y), 32>>>(Mp, Np, Kp, a, b, c);
    HG_CUDA_CHECK(cudaGetLastError());
  });
}

template void gemm_05_wmma<__half>(int, int, int, const __half*, const __half*, float*);
template void gemm_05_wmma<__nv_bfloat16>(int, int, int, const __nv_bfloat16*, const __nv_bfloat16*, float*);
template void gemm_05_wmma<float>(int, int, int, const float*, const float*, float*);

}  // namespace hg::cuda::gemm
