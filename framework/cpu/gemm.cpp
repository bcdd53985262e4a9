// framework/cpu/gemm.cpp — first, simple version: correct loops, parallel over rows of C.
#include "framework/cpu/gemm.h"

#include <cstring>
#include <stdexcept>
#include <vector>

namespace hg::cpu {
namespace {

// IEEE binary16 -> binary32, exact (every half is a float).
float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // normal: rebias 15 -> 127
  } else if (man == 0) {
    bits = sign;  // ±0
  } else {        // subnormal: value = man · 2^-24, normalise
    int e = -1;
    do { man <<= 1; ++e; } while ((man & 0x400u) == 0);
    bits = sign | uint32_t(112 - e) << 23 | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float bf16_bits_to_f32(uint16_t h) {  // bfloat16 is the top half of a float
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <class T, class Acc>
void gemm_naive(bool ta, bool tb, int64_t M, int64_t N, int64_t K, Acc alpha, const T* A,
                int64_t lda, const T* B, int64_t ldb, Acc beta, Acc* C, int64_t ldc) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < M; ++i) {
    Acc* c = C + i * ldc;
    std::vector<Acc> acc(N, Acc(0));
    for (int64_t p = 0; p < K; ++p) {
      Acc a = Acc(ta ? A[p * lda + i] : A[i * lda + p]);
      for (int64_t j = 0; j < N; ++j) acc[j] += a * Acc(tb ? B[j * ldb + p] : B[p * ldb + j]);
    }
    for (int64_t j = 0; j < N; ++j)
      c[j] = beta == Acc(0) ? alpha * acc[j] : alpha * acc[j] + beta * c[j];
  }
}

// Converts a stored (rows, cols) half/bf16 matrix to FP32 (exact).
template <class F>
std::vector<float> widen(const uint16_t* X, int64_t rows, int64_t cols, int64_t ld, F convert) {
  std::vector<float> out(size_t(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[size_t(r * cols + c)] = convert(X[r * ld + c]);
  return out;
}

GemmKernel g_kernel = GemmKernel::Portable;

}  // namespace

void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void dgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
           int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  gemm_naive(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_f16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const hg::half* A,
              int64_t lda, const hg::half* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  // hg::half is a struct holding one uint16_t: read its bits directly.
  auto a = widen(reinterpret_cast<const uint16_t*>(A), ta ? K : M, ta ? M : K, lda, f16_bits_to_f32);
  auto b = widen(reinterpret_cast<const uint16_t*>(B), tb ? N : K, tb ? K : N, ldb, f16_bits_to_f32);
  gemm_naive(ta, tb, M, N, K, alpha, a.data(), ta ? M : K, b.data(), tb ? K : N, beta, C, ldc);
}

void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
               const hg::bfloat16* A, int64_t lda, const hg::bfloat16* B, int64_t ldb, float beta,
               float* C, int64_t ldc) {
  auto a = widen(reinterpret_cast<const uint16_t*>(A), ta ? K : M, ta ? M : K, lda, bf16_bits_to_f32);
  auto b = widen(reinterpret_cast<const uint16_t*>(B), tb ? N : K, tb ? K : N, ldb, bf16_bits_to_f32);
  gemm_naive(ta, tb, M, N, K, alpha, a.data(), ta ? M : K, b.data(), tb ? K : N, beta, C, ldc);
}

bool gemm_kernel_supported(GemmKernel k) { return k == GemmKernel::Auto || k == GemmKernel::Portable; }
void set_gemm_kernel(GemmKernel k) {
  if (!gemm_kernel_supported(k)) throw std::runtime_error("set_gemm_kernel: kernel not supported");
  g_kernel = GemmKernel::Portable;
}
GemmKernel gemm_kernel() { return g_kernel; }
const char* gemm_kernel_name() { return "portable"; }

}  // namespace hg::cpu
