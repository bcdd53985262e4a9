// Chapter 05 exercise — one tensor-core tile, and a GEMM of tiles (see exercise.h).
//
// README "## What a tensor core computes": which roundings happen inside an mma, and which
// do not? Is the product of two F16 numbers rounded? In what precision does the sum live,
// and where does it start? Then rung 05 ("## The rungs"): a warp owns one tile of C and
// walks along K; what carries over from one step along K to the next?
// float(h) widens an hg::half exactly. halfgrad's own GEMMs (hg::cpu::gemm_f16, hg::matmul)
// are the answer already written: the checker refuses them.
// Run: ./lab check 05
#include "lessons/05_tensor_cores/exercise.h"

void mma_16x16x16(const hg::half* A, const hg::half* B, const float* C, float* D) {
  // TODO: D = A·B + C, F16 products exact, F32 accumulation in k order from C.
  for (int i = 0; i < 16 * 16; ++i) D[i] = 0.0f;
}

void tiled_gemm(int M, int N, int K, const hg::half* A, const hg::half* B, float* C) {
  // TODO: every 16×16 tile of C from K/16 calls of mma_16x16x16.
  for (int i = 0; i < M * N; ++i) C[i] = 0.0f;
}
