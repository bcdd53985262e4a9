// A wrong answer: halfgrad's CPU emulation of tensor-core GEMMs does the work.
// expect: exercise\.cpp calls hg::cpu::gemm_f16
#include "framework/cpu/gemm.h"
#include "lessons/05_tensor_cores/exercise.h"

void mma_16x16x16(const hg::half* A, const hg::half* B, const float* C, float* D) {
  for (int i = 0; i < 256; ++i) D[i] = C[i];
  hg::cpu::gemm_f16(false, false, 16, 16, 16, 1.0f, A, 16, B, 16, 1.0f, D, 16);
}

void tiled_gemm(int M, int N, int K, const hg::half* A, const hg::half* B, float* C) {
  hg::cpu::gemm_f16(false, false, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
}
