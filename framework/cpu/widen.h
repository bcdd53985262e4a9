#pragma once
// framework/cpu/widen.h — 16-bit floats to FP32 in bulk, for packing (gemm_pack.h).
//
// Both widenings are exact (every half and every bfloat16 is a float), so a GEMM that
// widens its operands and then runs the FP32 kernels computes exactly the products a
// tensor core computes. They must be fast: gemm_f16/gemm_bf16 widen every packed element,
// and with the scalar, format-generic conversion of framework/dtype that cost more than the
// multiply-adds for the shapes a training step runs (tests/bench/bench_sgemm.cpp, 3rd table).
#include <cstdint>

namespace hg::cpu {

// dst[i] = the F16 value src[i], i < n. With F16C (vcvtph2ps: 8 values per instruction,
// tails included) when the CPU has it, else framework/dtype's conversion. Same bits.
void widen_f16(const uint16_t* src, int64_t n, float* dst);

// dst[i] = the BF16 value src[i]: a bfloat16 is the top half of a float, so widening is a
// 16-bit shift (the compiler vectorises the loop). Unlike framework/dtype's conversion, a
// signalling NaN is not quieted here — it becomes a NaN product in the GEMM either way.
void widen_bf16(const uint16_t* src, int64_t n, float* dst);

}  // namespace hg::cpu
