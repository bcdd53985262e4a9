#pragma once
// framework/cpu/gemm_kernel.h — the micro-kernels: the innermost loop of sgemm.
//
// A micro-kernel computes one MR×NR tile of C from two packed slivers (gemm_pack.h):
//
//   a: MR-tall sliver of A, k-major:  a[k·MR + r] = op(A)(i+r, p+k)     (kc, MR)
//   b: NR-wide sliver of B, k-major:  b[k·NR + c] = op(B)(p+k, j+c)     (kc, NR)
//
//   for k in 0..kc:  AB(r, c) += a[k·MR + r] · b[k·NR + c]    — kc rank-1 updates of the tile
//
//   then  C(r, c) = alpha·AB(r, c) + beta·C(r, c)   (beta == 0: C is not read)
//
// The whole tile AB stays in registers for the entire k loop; per step the kernel loads one
// row of b (NR floats), broadcasts MR values of a, and does MR·NR multiply-adds. That ratio
// (MR·NR FMAs per MR + NR loads) is what makes the loop compute-bound instead of load-bound.
//
// Three kernels, chosen at run time (gemm.cpp): the same arithmetic, different widths.
//   portable     plain C++ loops (the compiler vectorises what it can for the base ISA)
//   avx2+fma     6×16: 12 ymm accumulators, see gemm_kernel_avx2.cpp for the register picture
//   avx512       8×32: 16 zmm accumulators (gemm_kernel_avx512.cpp)
#include <cstdint>

namespace hg::cpu {

using MicroKernelFn = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                               float alpha, float beta);

// A helper for packing (gemm_pack.h), optional: transposes an 8-row band of a matrix,
//   out[k·width + r] = src[r·ld + k]    for r < 8, k < kc8 (a multiple of 8),
// 8×8 blocks at a time in SIMD registers instead of one float at a time.
using Transpose8Fn = void (*)(const float* src, int64_t ld, int64_t kc8, float* out, int width);

struct MicroKernel {
  const char* name;
  int mr, nr;          // register tile
  int64_t mc, kc, nc;  // cache blocks for this tile (gemm.cpp explains the choice)
  MicroKernelFn fn;
  Transpose8Fn transpose8;  // nullptr: packing transposes one float at a time
};

// The AVX2 8×8 transpose (gemm_kernel_avx2.cpp); the AVX-512 kernel uses it too.
void transpose8_avx2(const float* src, int64_t ld, int64_t kc8, float* out, int width);

const MicroKernel& portable_micro_kernel();
const MicroKernel& avx2_micro_kernel();    // call only when the CPU has AVX2 and FMA
const MicroKernel& avx512_micro_kernel();  // call only when the CPU has AVX-512F

}  // namespace hg::cpu
