#pragma once
// The one conversion algorithm of framework/dtype.
//
// convert_bits(bits, from, to) takes the bits of a value in format `from` and returns the
// bits of the nearest value of format `to`, rounding to nearest with ties to even (the IEEE
// default). Every conversion in halfgrad is this function with two FloatFormats:
//   float -> half      convert_bits(float bits, kFP32, kFP16)      (narrowing: rounds)
//   half  -> float     convert_bits(half bits,  kFP16, kFP32)      (widening: exact)
//   encode(double)     convert_bits(double bits, kFP64, format)
// With the formats known at compile time the compiler folds every field into a constant,
// so this is also the fast software path.
//
// The idea: write the input as an integer times a power of two, value = sig × 2^scale,
// then find the result's exponent e (the input's, but never below the destination's
// smallest normal exponent: that is what makes subnormals) and its quantum 2^(e - M): the
// result is n × 2^quantum with an integer n. Getting n is a right shift of sig that rounds.
#include <cstdint>
#include <cstring>

#include "framework/dtype/float_format.h"

namespace hg {

// ---- bit patterns of the specials ----------------------------------------------------------
constexpr uint64_t exponent_field_of(uint64_t bits, const FloatFormat& f) {
  return (bits & (f.sign_bit() - 1)) >> f.mantissa_bits;
}
constexpr bool is_nan_bits(uint64_t bits, const FloatFormat& f) {
  uint64_t mant = bits & f.mantissa_mask();
  if (exponent_field_of(bits, f) != f.exponent_field_max()) return false;
  return f.ieee_nan ? mant != 0 : mant == f.mantissa_mask();  // E4M3: only S.1111.111
}
constexpr bool is_inf_bits(uint64_t bits, const FloatFormat& f) {
  return f.has_inf && exponent_field_of(bits, f) == f.exponent_field_max() &&
         (bits & f.mantissa_mask()) == 0;
}
constexpr uint64_t inf_bits(const FloatFormat& f) {  // only meaningful when f.has_inf
  return uint64_t(f.exponent_field_max()) << f.mantissa_bits;
}
// A quiet NaN: all-ones exponent, the top mantissa bit set (the "quiet" bit; a NaN with it
// clear is "signalling" and conversions quiet it), the rest the payload. E4M3 has one NaN.
constexpr uint64_t quiet_nan_bits(const FloatFormat& f, uint64_t payload = 0) {
  if (!f.ieee_nan) return (uint64_t(f.exponent_field_max()) << f.mantissa_bits) | f.mantissa_mask();
  uint64_t quiet = uint64_t{1} << (f.mantissa_bits - 1);
  return inf_bits(f) | quiet | (payload & f.mantissa_mask());
}
// The NaN a conversion writes into a format with canonical_nan (FP8): every bit but the sign
// set, 0x7f. It is what NVIDIA's conversions write for any NaN: cuda_fp8.hpp's
// __nv_cvt_float_to_fp8 first replaces the NaN by 0x7fffffff, which becomes 0x7f in E4M3 and
// in E5M2. So halfgrad's cast gives the GPU's byte. (Overflow is another matter: a
// non-saturating E4M3 cast of -1000 keeps its sign, 0xff, in cuda_fp8.hpp too.)
constexpr uint64_t canonical_nan_bits(const FloatFormat& f) { return f.sign_bit() - 1; }
// What a too-large value becomes (see Fp8Overflow in float_format.h).
constexpr uint64_t overflow_bits(const FloatFormat& f, Fp8Overflow overflow) {
  if (overflow == Fp8Overflow::Saturate) return f.max_finite_bits();
  return f.has_inf ? inf_bits(f) : quiet_nan_bits(f);
}

// x / 2^s rounded to nearest, ties to even. x < 2^63.
constexpr uint64_t shift_right_round_even(uint64_t x, int s) {
  if (s <= 0) return x << -s;  // exact
  if (s >= 64) return 0;       // x < 2^63 <= half of 2^s: rounds to 0
  uint64_t q = x >> s;
  uint64_t rest = x & ((uint64_t{1} << s) - 1);  // the bits shifted out
  uint64_t half = uint64_t{1} << (s - 1);        // exactly half a quantum
  // Above half: round up. Exactly half (a tie): round up only if q is odd, making it even.
  return q + uint64_t((rest > half) | ((rest == half) & (q & 1)));
}

// ---- the conversion --------------------------------------------------------------------------
// always_inline: with both formats known at the call site every field folds to a constant and
// float -> half is a few dozen instructions; an out-of-line generic copy is markedly slower.
[[gnu::always_inline]] inline uint64_t convert_bits(
    uint64_t bits, const FloatFormat& from, const FloatFormat& to,
    Fp8Overflow overflow = Fp8Overflow::NonSaturating) {
  const uint64_t sign = (bits & from.sign_bit()) ? to.sign_bit() : 0;
  const uint64_t exp_field = exponent_field_of(bits, from);
  const uint64_t mant = bits & from.mantissa_mask();

  // 1. Specials. NaN stays NaN: keep the sign and the top payload bits, set the quiet bit
  //    (FP8: its one NaN, 0x7f).
  if (is_nan_bits(bits, from)) {
    if (to.canonical_nan) return canonical_nan_bits(to);
    int drop = from.mantissa_bits - to.mantissa_bits;
    uint64_t payload = drop >= 0 ? mant >> drop : mant << -drop;
    return sign | quiet_nan_bits(to, payload);
  }
  if (is_inf_bits(bits, from)) return sign | overflow_bits(to, overflow);

  // 2. value = sig × 2^scale. A normal has the implicit leading 1; a subnormal does not,
  //    and sits at the smallest normal exponent.
  //    `lead` is the position of sig's highest 1 bit: M for a normal.
  uint64_t sig;
  int scale, lead;
  if (exp_field == 0) {
    sig = mant;
    if (sig == 0) return sign;  // ±0 keeps its sign
    scale = from.min_exponent() - from.mantissa_bits;
    lead = 63 - __builtin_clzll(sig);
  } else {
    sig = mant | (uint64_t{1} << from.mantissa_bits);
    scale = int(exp_field) - from.bias - from.mantissa_bits;
    lead = from.mantissa_bits;
  }

  // 3. The result's exponent: the input's (the value is in [2^e, 2^(e+1))), but not below
  //    the destination's min exponent. Below it the quantum stays 2^(min_exponent - M):
  //    the value becomes a subnormal, losing precision gradually instead of flushing to 0.
  int e = lead + scale;
  if (e < to.min_exponent()) e = to.min_exponent();
  int quantum = e - to.mantissa_bits;    // result = n × 2^quantum
  uint64_t n = shift_right_round_even(sig, quantum - scale);

  // 4. Rounding up can carry into the next binade (1.111..1 -> 10.000..0): n = 2^(M+1),
  //    which is exactly 2^(M) × 2^(quantum+1).
  if (n >> (to.mantissa_bits + 1)) {
    n >>= 1;
    e += 1;
  }

  // 5. Pack. n < 2^M only happens at the min exponent: a subnormal, exponent field 0.
  //    (A subnormal that rounded up to 2^M becomes the smallest normal by itself.)
  if (e > to.max_exponent()) return sign | overflow_bits(to, overflow);
  uint64_t out = n < (uint64_t{1} << to.mantissa_bits)
                     ? n
                     : (uint64_t(e + to.bias) << to.mantissa_bits) | (n & to.mantissa_mask());
  if (out > to.max_finite_bits()) return sign | overflow_bits(to, overflow);  // E4M3: 1111.111
  return sign | out;
}

// Bit casts between float/double and their bit patterns (memcpy: the defined way in C++17).
inline uint32_t float_bits(float x) { uint32_t u; std::memcpy(&u, &x, 4); return u; }
inline float float_from_bits(uint32_t u) { float x; std::memcpy(&x, &u, 4); return x; }
inline uint64_t double_bits(double x) { uint64_t u; std::memcpy(&u, &x, 8); return u; }
inline double double_from_bits(uint64_t u) { double x; std::memcpy(&x, &u, 8); return x; }

}  // namespace hg
