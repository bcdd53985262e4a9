// Array conversions float <-> half: the block kernels of framework/cpu/convert_kernel.h
// (F16C or AVX-512 when the CPU has them, 8 or 16 values per instruction; the software
// conversion otherwise). tests/unit/test_dtype_half.cpp checks that they give the same bits
// as the scalar path for every input.
#include "framework/dtype/half.h"

#include "framework/cpu/convert_kernel.h"

namespace hg {

void float_to_half_bits_n(const float* src, uint16_t* dst, size_t n) {
  cpu::convert_kernel().f32_to_f16(src, dst, int64_t(n));
}

void half_bits_to_float_n(const uint16_t* src, float* dst, size_t n) {
  cpu::convert_kernel().f16_to_f32(src, dst, int64_t(n));
}

}  // namespace hg
