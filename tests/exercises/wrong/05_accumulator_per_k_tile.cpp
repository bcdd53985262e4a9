// A wrong answer: the tile is right, but the GEMM gives every step along K an accumulator of
// its own and adds the K/16 results at the end (another order of additions).
// expect: Each tile along K got an accumulator of its own
#include <vector>

#include "lessons/05_tensor_cores/exercise.h"

void mma_16x16x16(const hg::half* A, const hg::half* B, const float* C, float* D) {
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      float acc = C[i * 16 + j];
      for (int k = 0; k < 16; ++k) acc += float(A[i * 16 + k]) * float(B[k * 16 + j]);
      D[i * 16 + j] = acc;
    }
}

void tiled_gemm(int M, int N, int K, const hg::half* A, const hg::half* B, float* C) {
  std::vector<hg::half> a(256), b(256);
  std::vector<float> zero(256, 0.0f), part(256);
  for (int ti = 0; ti < M; ti += 16)
    for (int tj = 0; tj < N; tj += 16) {
      std::vector<float> total(256, 0.0f);
      for (int tk = 0; tk < K; tk += 16) {
        for (int r = 0; r < 16; ++r)
          for (int c = 0; c < 16; ++c) {
            a[r * 16 + c] = A[(ti + r) * K + tk + c];
            b[r * 16 + c] = B[(tk + r) * N + tj + c];
          }
        mma_16x16x16(a.data(), b.data(), zero.data(), part.data());
        for (int e = 0; e < 256; ++e) total[e] += part[e];
      }
      for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 16; ++c) C[(ti + r) * N + tj + c] = total[r * 16 + c];
    }
}
