#pragma once
// FloatFormat: ONE description of a binary floating-point format. Everything else in
// framework/dtype (the conversions, the format table, decompose, range checks, the viewer's
// bit explorer) is computed from these few fields; no other file repeats a bias or a maximum.
//
// A value is stored as  sign | exponent field (E bits) | mantissa field (M bits).
//   normal     (0 < exponent field < all ones):  (-1)^s × 2^(field - bias) × 1.mantissa
//   subnormal  (exponent field == 0):            (-1)^s × 2^(1 - bias)     × 0.mantissa
//   specials   (exponent field == all ones):     inf when the mantissa is 0, NaN otherwise
//              (IEEE style). FP8 E4M3 (OCP) is different: it has no inf, and only
//              S.1111.111 is NaN, so the top binade holds seven more finite values.
//
// Section index
//   1. struct FloatFormat and its derived quantities
//   2. the formats: kFP32 kTF32 kFP16 kBF16 kE4M3 kE5M2 (and kFP64, the exact carrier)
//   3. FloatClass, encode/decode, Decomposed (declared in decompose.h, included below)
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hg {

// What happens when a finite value is too large for the format.
//   NonSaturating: IEEE behaviour, overflow gives ±inf (for E4M3, which has no inf: NaN).
//   Saturate:      clamp to ±max_finite (also for ±inf inputs); NaN stays NaN.
// The name says FP8 because that is where the choice is made in practice (FP16/BF16
// conversions are always NonSaturating), but the rule is the same for every format.
enum class Fp8Overflow { Saturate, NonSaturating };

// ---- 1. the description ------------------------------------------------------------------
struct FloatFormat {
  const char* id;        // "fp32" "tf32" "fp16" "bf16" "e4m3" "e5m2"  (command-line names)
  const char* name;      // "FP32" "TF32" "FP16" "BF16" "FP8 E4M3" "FP8 E5M2"
  int exponent_bits;     // E
  int mantissa_bits;     // M (stored fraction bits; the leading 1 of a normal is implicit)
  int bias;              // stored exponent field = unbiased exponent + bias
  bool has_inf;          // false for E4M3 (OCP)
  bool ieee_nan;         // true: all-ones exponent and mantissa != 0 is NaN
                         // false (E4M3): only S.1111.111 is NaN
  bool canonical_nan;    // true (FP8): a conversion writes every NaN as one pattern, 0x7f (what
                         // NVIDIA's conversions write); false: a NaN keeps its sign and top
                         // payload bits, as IEEE 754 recommends and F16C does

  // -- layout --
  constexpr int total_bits() const { return 1 + exponent_bits + mantissa_bits; }
  constexpr uint64_t mantissa_mask() const { return (uint64_t{1} << mantissa_bits) - 1; }
  constexpr uint32_t exponent_field_max() const { return (1u << exponent_bits) - 1; }  // all ones
  constexpr uint64_t sign_bit() const { return uint64_t{1} << (exponent_bits + mantissa_bits); }

  // -- range, in unbiased exponents --
  // Smallest normal exponent: field 1. Subnormals share this scale (2^(1-bias) × 0.mantissa).
  constexpr int min_exponent() const { return 1 - bias; }
  // Largest exponent of a finite value: the all-ones field is reserved for inf/NaN in IEEE
  // formats; E4M3 uses it for finite values (all but the NaN mantissa).
  constexpr int max_exponent() const {
    return int(ieee_nan ? exponent_field_max() - 1 : exponent_field_max()) - bias;
  }

  // -- the largest finite value, as bits (without sign) and as a number --
  constexpr uint64_t max_finite_bits() const {
    uint64_t exp_field = uint64_t(max_exponent() + bias);
    uint64_t mant = ieee_nan ? mantissa_mask() : mantissa_mask() - 1;  // E4M3: 111 is NaN
    return (exp_field << mantissa_bits) | mant;
  }
  constexpr double max_finite() const {
    uint64_t mant = max_finite_bits() & mantissa_mask();
    return pow2(max_exponent()) * (1.0 + double(mant) * pow2(-mantissa_bits));
  }
  constexpr double min_normal() const { return pow2(min_exponent()); }
  constexpr double min_subnormal() const { return pow2(min_exponent() - mantissa_bits); }
  // Machine epsilon: the gap between 1 and the next value, 2^-M. Rounding to nearest then
  // has a relative error of at most epsilon/2 (the "unit roundoff").
  constexpr double epsilon() const { return pow2(-mantissa_bits); }
  // Decimal digits of precision: (M + 1) · log10(2). FP32 ≈ 7.2, FP16 ≈ 3.3, BF16 ≈ 2.4.
  double decimal_digits() const;

  // 2^e exactly as a double (every e used here is far inside the double range).
  static constexpr double pow2(int e) {
    double r = 1.0;
    for (; e > 0; --e) r *= 2.0;
    for (; e < 0; ++e) r *= 0.5;
    return r;
  }
};

// ---- 2. the formats ------------------------------------------------------------------------
//                                  id      name        E   M   bias   inf    ieee NaN  canonical NaN
inline constexpr FloatFormat kFP32{"fp32", "FP32",      8, 23,  127, true,  true,     false};
inline constexpr FloatFormat kTF32{"tf32", "TF32",      8, 10,  127, true,  true,     false};  // FP32 range, FP16 precision
inline constexpr FloatFormat kFP16{"fp16", "FP16",      5, 10,   15, true,  true,     false};
inline constexpr FloatFormat kBF16{"bf16", "BF16",      8,  7,  127, true,  true,     false};  // FP32 range, 8 bits precision
inline constexpr FloatFormat kE4M3{"e4m3", "FP8 E4M3",  4,  3,    7, false, false,    true};   // OCP FP8: no inf, max 448
inline constexpr FloatFormat kE5M2{"e5m2", "FP8 E5M2",  5,  2,   15, true,  true,     true};   // FP8 with FP16's range
// FP64 is not one of the course's formats; it is the exact carrier that encode/decode and
// decompose compute in (every value of the formats above is exactly a double).
inline constexpr FloatFormat kFP64{"fp64", "FP64",     11, 52, 1023, true,  true,     false};

const std::vector<const FloatFormat*>& all_formats();   // FP32, TF32, FP16, BF16, E4M3, E5M2
const FloatFormat* find_format(std::string_view id);    // nullptr when unknown
std::string format_ids();                               // "fp32, tf32, fp16, bf16, e4m3, e5m2"

}  // namespace hg

#include "framework/dtype/decompose.h"
