// framework/cpu/gemm_kernel_portable.cpp — the micro-kernel in plain C++, for any CPU.
//
// The array `ab` plays the role of the AVX2 kernel's 12 ymm registers. Compiled for the base
// ISA (SSE2 on x86-64, 16 registers of 4 floats): a 4×8 tile is 8 xmm accumulators, which
// GCC keeps in registers and updates with 4-wide multiplies and adds (no FMA). A 6×16 tile
// like the AVX2 kernel's does not fit in 16 xmm registers: tried, it ran several times slower
// (the compiler spills `ab` to the stack and shuffles).
#include "framework/cpu/gemm_kernel.h"

namespace hg::cpu {
namespace {

constexpr int MR = 4, NR = 8;

void kernel_portable(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                     float alpha, float beta) {
  float ab[MR][NR] = {};
  for (int64_t k = 0; k < kc; ++k) {  // one rank-1 update of the tile per k
    for (int r = 0; r < MR; ++r) {
      const float ar = a[r];
      for (int j = 0; j < NR; ++j) ab[r][j] += ar * b[j];
    }
    a += MR;
    b += NR;
  }
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < NR; ++j)
      c[r * ldc + j] = beta == 0.f ? alpha * ab[r][j] : alpha * ab[r][j] + beta * c[r * ldc + j];
}

}  // namespace

const MicroKernel& portable_micro_kernel() {
  static const MicroKernel k{"portable", MR, NR, /*mc=*/144, /*kc=*/256, /*nc=*/4096, kernel_portable,
                             /*transpose8=*/nullptr};
  return k;
}

}  // namespace hg::cpu
