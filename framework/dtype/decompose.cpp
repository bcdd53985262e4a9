// encode / decode / decompose for every FloatFormat, and exact decimal expansions.
// Section index: 1. encode, decode, classify   2. neighbours   3. decompose
//                4. exact decimal of a double   5. bits as text
#include "framework/dtype/decompose.h"

#include <cmath>
#include <limits>
#include <vector>

#include "framework/dtype/rounding.h"

namespace hg {

// ---- 1. encode, decode, classify ---------------------------------------------------------
uint64_t encode(double value, const FloatFormat& f, Fp8Overflow overflow) {
  return convert_bits(double_bits(value), kFP64, f, overflow);
}

double decode(uint64_t bits, const FloatFormat& f) {
  return double_from_bits(convert_bits(bits, f, kFP64));  // widening: exact
}

FloatClass classify_bits(uint64_t bits, const FloatFormat& f) {
  if (is_nan_bits(bits, f)) return FloatClass::NaN;
  if (is_inf_bits(bits, f)) return FloatClass::Inf;
  uint64_t mag = bits & (f.sign_bit() - 1);
  if (mag == 0) return FloatClass::Zero;
  return exponent_field_of(bits, f) == 0 ? FloatClass::Subnormal : FloatClass::Normal;
}

const char* to_string(FloatClass c) {
  switch (c) {
    case FloatClass::Zero: return "zero";
    case FloatClass::Subnormal: return "subnormal";
    case FloatClass::Normal: return "normal";
    case FloatClass::Inf: return "inf";
    case FloatClass::NaN: return "NaN";
  }
  return "?";
}

// ---- 2. neighbours -------------------------------------------------------------------------
// For a format with a sign bit, the magnitudes are ordered like their bit patterns: the next
// value away from zero is magnitude bits + 1 (0x7BFF + 1 = 0x7C00: 65504 -> inf in FP16).
static double step(uint64_t bits, const FloatFormat& f, bool up) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (is_nan_bits(bits, f)) return nan;
  uint64_t sign = bits & f.sign_bit();
  uint64_t mag = bits & (f.sign_bit() - 1);
  bool away_from_zero = (sign == 0) == up;
  if (away_from_zero) {
    if (is_inf_bits(bits, f)) return decode(bits, f);  // inf has no successor
    return decode(sign | (mag + 1), f);                // past max: inf, or NaN in E4M3
  }
  if (mag == 0) return decode((sign ^ f.sign_bit()) | 1, f);  // ±0 -> ∓min_subnormal
  return decode(sign | (mag - 1), f);
}

// ---- 3. decompose --------------------------------------------------------------------------
Decomposed decompose_bits(uint64_t bits, const FloatFormat& f) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Decomposed d;
  d.format = &f;
  d.input = nan;
  d.bits = bits;
  d.sign = (bits & f.sign_bit()) ? 1 : 0;
  d.exponent_field = uint32_t(exponent_field_of(bits, f));
  d.mantissa_field = bits & f.mantissa_mask();
  d.cls = classify_bits(bits, f);
  // Zero and subnormals are scaled by 2^(1 - bias), not 2^(0 - bias): the field 0 means
  // "no implicit 1", not a smaller exponent.
  d.unbiased_exponent = d.exponent_field == 0 ? f.min_exponent() : int(d.exponent_field) - f.bias;
  d.value = decode(bits, f);
  d.exact_decimal = exact_decimal(d.value);
  bool finite = d.cls != FloatClass::Inf && d.cls != FloatClass::NaN;
  d.ulp = finite ? FloatFormat::pow2(d.unbiased_exponent - f.mantissa_bits) : nan;
  d.next_up = step(bits, f, true);
  d.next_down = step(bits, f, false);
  d.abs_error = d.rel_error = d.error_ulps = nan;
  return d;
}

Decomposed decompose(double value, const FloatFormat& f) {
  Decomposed d = decompose_bits(encode(value, f), f);
  d.input = value;
  const double inf = std::numeric_limits<double>::infinity();
  if (std::isnan(value) || std::isnan(d.value)) return d;  // errors stay NaN
  if (std::isinf(value) || std::isinf(d.value)) {
    double e = d.value == value ? 0.0 : inf;  // overflow to inf: an infinite error
    d.abs_error = d.rel_error = d.error_ulps = e;
    return d;
  }
  // Exact in double: value and d.value are within a factor 2 of each other (Sterbenz),
  // or one of them is 0.
  d.abs_error = std::fabs(d.value - value);
  d.rel_error = value != 0 ? d.abs_error / std::fabs(value) : (d.abs_error == 0 ? 0.0 : inf);
  d.error_ulps = d.abs_error / d.ulp;
  return d;
}

// ---- 4. exact decimal ------------------------------------------------------------------------
// |x| = m × 2^e with an integer m. For e >= 0 that is an integer; for e < 0 it is
// m × 5^k / 10^k (k = -e): compute the integer m × 5^k, then put the decimal point k digits
// from the right. Big integers in base 10^9 limbs, least significant first.
namespace {
using BigDec = std::vector<uint32_t>;
constexpr uint32_t kLimb = 1000000000;

void mul_small(BigDec& a, uint32_t f) {
  uint64_t carry = 0;
  for (uint32_t& limb : a) {
    uint64_t t = uint64_t(limb) * f + carry;
    limb = uint32_t(t % kLimb);
    carry = t / kLimb;
  }
  while (carry) {
    a.push_back(uint32_t(carry % kLimb));
    carry /= kLimb;
  }
}

std::string to_digits(const BigDec& a) {
  std::string s = std::to_string(a.back());
  for (size_t i = a.size() - 1; i-- > 0;) {
    std::string part = std::to_string(a[i]);
    s += std::string(9 - part.size(), '0') + part;
  }
  return s;
}
}  // namespace

std::string exact_decimal(double x) {
  if (std::isnan(x)) return "nan";
  std::string sign = std::signbit(x) ? "-" : "";
  if (std::isinf(x)) return sign + "inf";
  if (x == 0) return sign + "0";
  int k2;
  double frac = std::frexp(std::fabs(x), &k2);  // |x| = frac × 2^k2, frac in [0.5, 1)
  uint64_t m = uint64_t(std::ldexp(frac, 53));  // exact: 53 bits
  int e = k2 - 53;
  while ((m & 1) == 0) {  // fewer powers of 5 to multiply by
    m >>= 1;
    ++e;
  }
  BigDec n;
  for (uint64_t t = m; t; t /= kLimb) n.push_back(uint32_t(t % kLimb));
  if (e >= 0) {
    for (int i = 0; i < e; ++i) mul_small(n, 2);
    return sign + to_digits(n);
  }
  int k = -e;
  for (int i = 0; i < k; ++i) mul_small(n, 5);
  std::string digits = to_digits(n);
  if (int(digits.size()) <= k) digits = std::string(k + 1 - digits.size(), '0') + digits;
  return sign + digits.substr(0, digits.size() - k) + "." + digits.substr(digits.size() - k);
}

// ---- 5. bits as text -------------------------------------------------------------------------
std::string bits_string(uint64_t bits, const FloatFormat& f) {
  std::string s;
  for (int i = f.total_bits() - 1; i >= 0; --i) {
    s += ((bits >> i) & 1) ? '1' : '0';
    if (i == f.total_bits() - 1 || i == f.mantissa_bits) s += ' ';
  }
  return s;
}

}  // namespace hg
