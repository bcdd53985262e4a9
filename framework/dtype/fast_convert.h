#pragma once
// framework/dtype/fast_convert.h — F32 <-> F16 and F32 <-> BF16 one value at a time, in a
// handful of integer operations.
//
// convert_bits (rounding.h) is the one conversion algorithm of framework/dtype: any two
// formats, every case spelled out. A loop over an F16 or BF16 tensor converts every element,
// and there that generality costs: about 60 instructions and several branches per float ->
// half. The four functions below are the same rounding for one fixed pair of formats, written
// with that pair's constants: the common case is a few integer operations behind one compare,
// about a fifth of the instructions. hg::half and hg::bfloat16
// convert with them (and so does every load/store of an element); the block kernels of
// framework/cpu/convert_kernel.h do the same 8 or 16 at a time with the CPU's instructions.
//
// "The same rounding" means the same bits as convert_bits for every input: round to nearest,
// ties to even; subnormals kept; ±0 keep their sign; too large becomes ±inf; a NaN keeps its
// sign and top payload bits and comes out quiet. tests/unit/test_convert_kernel.cpp checks
// all 65,536 16-bit patterns and 2^29 floats, all 2^32 with HG_TEST_ALL_FLOATS=1 (its
// "portable" kernel is these functions).
//
// One assumption, shared with all float arithmetic in halfgrad: the FPU rounds to nearest
// (the default; nothing here changes it). The F16 subnormal case lets the FPU do its rounding.
#include <cstdint>

#include "framework/dtype/float_format.h"
#include "framework/dtype/rounding.h"

namespace hg::fast {

constexpr uint32_t kFloatInf = uint32_t(kFP32.exponent_field_max()) << kFP32.mantissa_bits;  // 0x7F800000

namespace f16 {  // the constants of FP32 -> FP16, from the two FloatFormats
constexpr int kDrop = kFP32.mantissa_bits - kFP16.mantissa_bits;         // 13 mantissa bits go
constexpr uint32_t kRebias = uint32_t(kFP32.bias - kFP16.bias) << kFP32.mantissa_bits;  // 127 -> 15
constexpr uint32_t kHalfInf = uint32_t(kFP16.exponent_field_max()) << kFP16.mantissa_bits;  // 0x7C00
// |x| as float bits from which the result is a normal half: 2^-14
constexpr uint32_t kMinNormal = uint32_t(kFP16.min_exponent() + kFP32.bias) << kFP32.mantissa_bits;
// |x| as float bits from which the result is inf: halfway between the largest half (65504)
// and 2^16 = 65520, a tie that rounds to the even neighbour, 2^16, which is too large.
constexpr uint32_t kOverflow =
    ((uint32_t(kFP16.max_finite_bits()) << kDrop) + kRebias) + (1u << (kDrop - 1));
// In [0.5, 1) floats are spaced 2^-1 · 2^-23 = 2^-24 apart: exactly FP16's subnormal spacing.
constexpr float kSubnormalCarrier = 0.5f;
static_assert(0.5 * kFP32.epsilon() == kFP16.min_subnormal(), "0.5's ULP is the FP16 subnormal step");
}  // namespace f16

// float -> half. The common case, a normal result, is a few integer operations behind one
// compare; the rare ones (subnormal or zero, overflow, inf, NaN) follow.
inline uint16_t float_to_half(float x) {
  using namespace f16;
  const uint32_t u = float_bits(x);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7FFFFFFFu;  // |x|
  if (a - kMinNormal < kOverflow - kMinNormal) {  // 2^-14 <= |x| < 65520: a normal half
    // Rebias the exponent, then drop 13 mantissa bits rounding to nearest even: add just
    // under half of the dropped range (0xFFF) plus the lowest kept bit (so an exact half
    // rounds up only from an odd value), then shift. A carry out of the mantissa lands in the
    // exponent, which is also right: 1.11…1 rounds up to 10.0.
    const uint32_t odd = (a >> kDrop) & 1u;
    return uint16_t(sign | ((a - kRebias + ((1u << (kDrop - 1)) - 1) + odd) >> kDrop));
  }
  if (a < kMinNormal) {  // a subnormal half, or ±0
    // |x| + 0.5 lies in [0.5, 0.5 + 2^-14], where the FPU rounds it to a multiple of 2^-24
    // (to nearest, ties to even); the low bits of the sum then count the 2^-24 steps, and
    // that count is the subnormal's mantissa (1024 would be the smallest normal: also right).
    const float sum = float_from_bits(a) + kSubnormalCarrier;
    return uint16_t(sign | (float_bits(sum) - float_bits(kSubnormalCarrier)));
  }
  if (a <= kFloatInf) return uint16_t(sign | kHalfInf);  // too large, or ±inf
  // NaN: the top 10 payload bits, with the quiet bit set.
  return uint16_t(sign | kHalfInf | (1u << (kFP16.mantissa_bits - 1)) | ((a >> kDrop) & 0x03FFu));
}

// half -> float, exact. A normal keeps its mantissa under a rebiased exponent; a subnormal
// (mantissa × 2^-24) is the integer mantissa times 2^-24, computed exactly by the FPU; inf
// and NaN get the all-ones exponent (a NaN also its quiet bit).
inline float half_to_float(uint16_t h) {
  using namespace f16;
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t em = h & 0x7FFFu;  // exponent and mantissa fields
  constexpr uint32_t kMinNormalHalf = 1u << kFP16.mantissa_bits;  // exponent field 1
  if (em - kMinNormalHalf < kHalfInf - kMinNormalHalf)  // a normal half
    return float_from_bits(sign | ((em << kDrop) + kRebias));
  if (em < kMinNormalHalf)  // subnormal or ±0
    return float_from_bits(sign | float_bits(float(int32_t(em)) * float(kFP16.min_subnormal())));
  const uint32_t quiet = em > kHalfInf ? 1u << (kFP32.mantissa_bits - 1) : 0u;
  return float_from_bits(sign | kFloatInf | (em << kDrop) | quiet);  // inf, or a quiet NaN
}

// float -> bfloat16: drop the low 16 bits rounding to nearest even, the same add-and-shift as
// above without the rebias (BF16 has FP32's exponent, so subnormals, overflow to inf and the
// carry into the exponent all come out of the one formula). Only NaN needs its own case:
// keep the top payload bits and set the quiet bit (the addition could carry a NaN into inf).
inline uint16_t float_to_bf16(float x) {
  const uint32_t u = float_bits(x);
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet = (u >> 16) | (1u << (kBF16.mantissa_bits - 1));
  return uint16_t((u & 0x7FFFFFFFu) > kFloatInf ? quiet : rounded);
}

// bfloat16 -> float: the top half of a float, exact; a NaN comes out quiet.
inline float bf16_to_float(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  const bool nan = (u & 0x7FFFFFFFu) > kFloatInf;
  return float_from_bits(nan ? u | (1u << (kFP32.mantissa_bits - 1)) : u);
}

}  // namespace hg::fast
