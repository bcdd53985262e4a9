#pragma once
// framework/cpu/gemm_bf16_kernels.h — the BF16 GEMM kernels of the CPU's matrix units, as
// gemm.cpp calls them: each computes one thread's rectangle of C.
//
//   avx512bf16_gemm_rectangle   VDPBF16PS, 8×32 register tiles: one thread's rectangle
//                               C[m0:m1, n0:n1] of C  (gemm_bf16_avx512bf16.cpp)
//   amx_gemm                    TDPBF16PS, 32×32 in four tiles: all of C, on `threads`
//                               threads  (gemm_bf16_amx.cpp)
//
// Both compute C = op(A) · op(B) (C is overwritten: the caller applies alpha and beta), A and
// B holding BF16 bits, in the order bf16_units.h writes down. Call one only when the CPU has
// its unit (and, for AMX, the permission).
#include <cstdint>
#include <string>

#include "framework/cpu/gemm_pack.h"

namespace hg::cpu {

void avx512bf16_gemm_rectangle(const MatrixView<uint16_t>& A, const MatrixView<uint16_t>& B,
                               int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K, float* C,
                               int64_t ldc);
void amx_gemm(const MatrixView<uint16_t>& A, const MatrixView<uint16_t>& B, int64_t M, int64_t N,
              int64_t K, float* C, int64_t ldc, int threads);

// May this process use the AMX tiles? Asked of the operating system once (gemm_bf16_amx.cpp).
struct AmxPermission {
  bool granted = false;
  std::string reason;  // why not, when not granted: no AMX on this CPU, or the OS refused
};
const AmxPermission& amx_permission();

}  // namespace hg::cpu
