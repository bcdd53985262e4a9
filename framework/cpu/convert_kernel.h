#pragma once
// framework/cpu/convert_kernel.h — F32 <-> F16 and F32 <-> BF16 for whole blocks of values:
// the loops under every F16/BF16 tensor on the CPU (copy.h's convert, elementwise.h's map,
// widen.h's GEMM packing).
//
// An F16 or BF16 op on the CPU is "widen the inputs to F32, compute, round the result back",
// so it converts every element twice or more. One value at a time that is a few integer
// operations (framework/dtype/fast_convert.h); a block at a time the CPU has instructions
// for it:
//
//   kernel        needs                       F32 <-> F16                  F32 -> BF16
//   portable      any CPU                     fast_convert.h, one by one   the same
//   f16c          AVX2 + F16C (x86, 2013+)    vcvtps2ph/vcvtph2ps, 8 wide  integer rounding, 8 wide
//   avx512        AVX-512 F/BW/VL             vcvtps2ph/vcvtph2ps, 16 wide integer rounding, 16 wide
//   avx512_bf16   the above + AVX512_BF16     as avx512                    vcvtneps2bf16, 16 wide
//
// BF16 -> F32 is a 16-bit shift everywhere (a bfloat16 is the top half of a float), plus
// setting the quiet bit of a NaN. Every kernel gives the same bits as framework/dtype's
// conversions for every input: tests/unit/test_convert_kernel.cpp runs each kernel the CPU
// has over all 65,536 16-bit patterns and 2^29 floats (every subnormal, inf and NaN; all 2^32
// with HG_TEST_ALL_FLOATS=1). Where an instruction differs from
// IEEE rounding, the kernel corrects it, and says so (vcvtneps2bf16 flushes subnormal inputs
// to zero: convert_kernel.cpp, section 4).
//
// The choice is made once, at run time, from what the CPU reports — like the GEMM's
// micro-kernels (gemm.cpp): the library is compiled for plain x86-64, and each SIMD function
// is compiled for its instructions alone with a target attribute.
#include <cstdint>
#include <vector>

namespace hg::cpu {

struct ConvertKernel {
  const char* name;
  // dst[i] = src[i] converted, i < n (any n, no alignment needed); round to nearest even.
  void (*f32_to_f16)(const float* src, uint16_t* dst, int64_t n);
  void (*f16_to_f32)(const uint16_t* src, float* dst, int64_t n);
  void (*f32_to_bf16)(const float* src, uint16_t* dst, int64_t n);
  void (*bf16_to_f32)(const uint16_t* src, float* dst, int64_t n);
};

// The fastest kernel this CPU can run, chosen on first use.
const ConvertKernel& convert_kernel();

// Every kernel this CPU can run, portable first (for the tests and the benchmarks).
std::vector<const ConvertKernel*> supported_convert_kernels();

}  // namespace hg::cpu
