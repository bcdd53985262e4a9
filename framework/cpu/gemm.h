#pragma once
// framework/cpu/gemm.h — matrix multiplication on the CPU, the kernel under linear, matmul and conv2d.
//
// Every routine here computes, in row-major storage,
//
//     C (M,N) = alpha · op(A) · op(B) + beta · C          op(X) = X or Xᵀ
//
//   A is stored (M,K) with row stride lda, or with trans_a stored (K,M);
//   B is stored (K,N) with row stride ldb, or with trans_b stored (N,K);
//   C is stored (M,N) with row stride ldc.  lda/ldb/ldc ≥ the stored row length.
//   beta == 0 overwrites C (NaN/Inf already in C are not propagated), as BLAS does.
//
// The transpose flags are how the backward passes avoid copies: for Y = X·Wᵀ (linear),
//   dX = dY·W      -> sgemm(false, false, ...)
//   dW = dYᵀ·X     -> sgemm(true,  false, ...)
//
// How sgemm is made fast (cache blocking, packing, the AVX2+FMA micro-kernel) is told in
// gemm.cpp's header; gemm_kernel.h and gemm_kernel_*.cpp hold the micro-kernels.
#include <cstdint>
#include <string>

namespace hg {
struct half;      // framework/dtype/half.h: IEEE binary16, 16 bits
struct bfloat16;  // framework/dtype/bfloat16.h: 8-bit exponent, 7-bit mantissa
}  // namespace hg

namespace hg::cpu {

// FP32: OpenMP-parallel, cache-blocked, with a SIMD micro-kernel chosen at run time.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
           const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
           int64_t ldc);

// Tensor-core numerics on the CPU: F16 (or BF16) operands, every product exact (an 11-bit
// by 11-bit significand product fits in FP32's 24 bits), FP32 accumulation, FP32 output —
// what an FP16 WMMA/mma instruction with an FP32 accumulator computes. Only the order of
// the additions differs from a GPU.
void gemm_f16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
              const hg::half* A, int64_t lda, const hg::half* B, int64_t ldb, float beta,
              float* C, int64_t ldc);
void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
               const hg::bfloat16* A, int64_t lda, const hg::bfloat16* B, int64_t ldb,
               float beta, float* C, int64_t ldc);

// FP64, for finite-difference gradient checks: simple and blocked, not tuned.
void dgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, double alpha,
           const double* A, int64_t lda, const double* B, int64_t ldb, double beta, double* C,
           int64_t ldc);

// Which kernel sgemm (and gemm_f16/bf16) use. Auto picks the widest one this CPU supports
// (checked once with __builtin_cpu_supports). Tests and the benchmark force a kernel to
// compare the paths; asking for one the CPU lacks throws std::runtime_error. Any program can
// be run with a chosen kernel through the environment, e.g. to see what the SIMD kernels buy:
//   HG_GEMM_KERNEL=portable ./lab lesson 02     (portable|avx2|avx512|avx512_bf16|amx|auto)
//
// Two of them are BF16 matrix units (bf16_units.h) and serve gemm_bf16 only:
//   kernel        F32 GEMMs (sgemm, gemm_f16)      BF16 GEMMs (gemm_bf16)
//   auto          the widest F32 kernel            amx, else avx512_bf16 on AMD (gemm.cpp
//                                                  says why), else widened to F32
//   portable|avx2|avx512   that kernel             widened to F32, then that kernel
//   avx512_bf16   the widest F32 kernel            VDPBF16PS (gemm_bf16_avx512bf16.cpp)
//   amx           the widest F32 kernel            AMX tiles (gemm_bf16_amx.cpp)
// So forcing an F32 kernel gives every machine the same BF16 bits (avx2 and avx512 agree bit
// for bit, test_gemm_cpu.cpp), while the units round their sums their own way.
enum class GemmKernel { Auto, Portable, Avx2, Avx512, Avx512Bf16, Amx };
void set_gemm_kernel(GemmKernel kernel);
GemmKernel gemm_kernel();             // the F32 kernel in use: Portable, Avx2 or Avx512
const char* gemm_kernel_name();       // "portable", "avx2+fma", "avx512"
GemmKernel gemm_bf16_kernel();        // gemm_bf16's: Amx, Avx512Bf16, or the F32 kernel (widened)
std::string gemm_bf16_kernel_name();  // "amx", "avx512_bf16", or e.g. "avx512 (BF16 widened to F32)"
bool gemm_kernel_supported(GemmKernel kernel);
GemmKernel gemm_kernel_from_name(const std::string& name);  // "portable" ...; throws if unknown
// Why `kernel` cannot run here ("" when it can): no such unit, or the OS refused AMX's tiles.
std::string gemm_kernel_unavailable_reason(GemmKernel kernel);

// Where the 16-bit matmuls of the engine run on this CPU, as the chapters say it: F16 is
// always widened to F32 (no x86 unit adds F16 products in F32), BF16 runs on the BF16 unit
// gemm_bf16 uses, or is widened too. One sentence, no final period.
std::string cpu_lowp_sentence();

}  // namespace hg::cpu
