// framework/cpu/gemm_kernel_portable.cpp — the micro-kernel in plain C++, for any CPU.
//
// Same 6×16 tile as the AVX2 kernel so the two can be compared line for line: the array
// `ab` plays the role of the 12 ymm registers. Compiled for the base ISA (SSE2 on x86-64);
// GCC vectorises the c-loop into 4-wide SSE operations, without FMA.
#include "framework/cpu/gemm_kernel.h"

namespace hg::cpu {
namespace {

constexpr int MR = 6, NR = 16;

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
  static const MicroKernel k{"portable", MR, NR, /*mc=*/144, /*kc=*/256, /*nc=*/4096, kernel_portable};
  return k;
}

}  // namespace hg::cpu
