#pragma once
// framework/cpu/widen.h — 16-bit floats to FP32 in bulk, for packing (gemm_pack.h).
//
// Both widenings are exact (every half and every bfloat16 is a float), so a GEMM that
// widens its operands and then runs the FP32 kernels computes exactly the products a
// tensor core computes. They must be fast: gemm_f16/gemm_bf16 widen every packed element,
// and with the scalar, format-generic conversion of framework/dtype that cost more than the
// multiply-adds for the shapes a training step runs (tests/bench/bench_sgemm.cpp, 3rd table).
// Both are the block kernels of convert_kernel.h (F16C or AVX-512 when the CPU has them):
// the same bits as framework/dtype's conversions, a NaN included (it comes out quiet).
#include <cstdint>

namespace hg::cpu {

// dst[i] = the F16 value src[i], i < n.
void widen_f16(const uint16_t* src, int64_t n, float* dst);

// dst[i] = the BF16 value src[i]: a bfloat16 is the top half of a float, so this is a
// 16-bit shift.
void widen_bf16(const uint16_t* src, int64_t n, float* dst);

}  // namespace hg::cpu
