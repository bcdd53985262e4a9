// Chapter 05 exercise — the reference solution.
//
// Inside an mma: the F16 × F16 products are exact in F32 (11-bit × 11-bit significands make
// at most 22 bits, F32 holds 24), so the only roundings are the F32 additions, starting from
// C. Across K: the accumulator fragment stays in F32 registers from one mma to the next;
// it is rounded to anything narrower only when (if ever) it is stored.
#include "lessons/05_tensor_cores/exercise.h"

#include <vector>

void mma_16x16x16(const hg::half* A, const hg::half* B, const float* C, float* D) {
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float acc = C[i * 16 + j];
      for (int k = 0; k < 16; ++k) acc += float(A[i * 16 + k]) * float(B[k * 16 + j]);  // exact product
      D[i * 16 + j] = acc;
    }
}

void tiled_gemm(int M, int N, int K, const hg::half* A, const hg::half* B, float* C) {
  std::vector<hg::half> a(256), b(256);  // the tiles a warp loads (load_matrix_sync)
  std::vector<float> acc(256);           // the accumulator fragment
  for (int ti = 0; ti < M; ti += 16)
    for (int tj = 0; tj < N; tj += 16) {
      acc.assign(256, 0.0f);  // fill_fragment(acc, 0)
      for (int tk = 0; tk < K; tk += 16) {
        for (int r = 0; r < 16; ++r)
          for (int c = 0; c < 16; ++c) {
            a[r * 16 + c] = A[(ti + r) * K + tk + c];
            b[r * 16 + c] = B[(tk + r) * N + tj + c];
          }
        mma_16x16x16(a.data(), b.data(), acc.data(), acc.data());  // acc = a·b + acc
      }
      for (int r = 0; r < 16; ++r)  // store_matrix_sync
        for (int c = 0; c < 16; ++c) C[(ti + r) * N + tj + c] = acc[r * 16 + c];
    }
}
