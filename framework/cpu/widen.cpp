// framework/cpu/widen.cpp — see widen.h.
#include "framework/cpu/widen.h"

#include "framework/cpu/convert_kernel.h"

namespace hg::cpu {

void widen_f16(const uint16_t* src, int64_t n, float* dst) { convert_kernel().f16_to_f32(src, dst, n); }

void widen_bf16(const uint16_t* src, int64_t n, float* dst) { convert_kernel().bf16_to_f32(src, dst, n); }

}  // namespace hg::cpu
