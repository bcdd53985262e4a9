#pragma once
// Independent references for the dtype tests.
//
// They are written differently from framework/dtype/rounding.h on purpose, so that a bug
// there cannot hide in here: no shared code, no FloatFormat (the constants are written out
// from the format specifications), and rounding done by comparing distances in double
// arithmetic instead of shifting integer significands.
//   RefFormat + ref_round():   list every representable value, find the two neighbours of
//                              x by binary search, pick the nearer (ties: the even code).
//   ref_round_keep_bits():     for formats that are FP32 with fewer mantissa bits (BF16,
//                              TF32): truncate, take the next pattern up, compare distances.
// Also: sweep helpers that run over float32 bit patterns with OpenMP and report the first
// mismatch.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace ref {

inline uint32_t bits_of(float x) { uint32_t u; std::memcpy(&u, &x, 4); return u; }
inline float float_of(uint32_t u) { float x; std::memcpy(&x, &u, 4); return x; }

// A format as its specification states it.
struct RefFormat {
  const char* name;
  int E, M, bias;
  bool has_inf;     // IEEE-like: all-ones exponent is inf/NaN
  double max;       // largest finite value, from the specification (not computed)
};
inline const RefFormat kFP16{"FP16", 5, 10, 15, true, 65504.0};
inline const RefFormat kE4M3{"E4M3", 4, 3, 7, false, 448.0};
inline const RefFormat kE5M2{"E5M2", 5, 2, 15, true, 57344.0};
inline const RefFormat kBF16{"BF16", 8, 7, 127, true, 0x1.fep127};   // (2 - 2^-7) × 2^127
inline const RefFormat kTF32{"TF32", 8, 10, 127, true, 0x1.ffcp127}; // (2 - 2^-10) × 2^127

// Value of a non-negative code, straight from the definition.
inline double ref_value(const RefFormat& f, uint32_t code) {
  uint32_t e = code >> f.M, m = code & ((1u << f.M) - 1);
  if (e == 0) return std::ldexp(double(m), 1 - f.bias - f.M);           // 0.m × 2^(1-bias)
  return std::ldexp(1.0 + std::ldexp(double(m), -f.M), int(e) - f.bias);  // 1.m × 2^(e-bias)
}

// Every finite non-negative value, index = code, ascending. Stops at the spec's max.
inline std::vector<double> ref_values(const RefFormat& f) {
  std::vector<double> v;
  for (uint32_t code = 0;; ++code) {
    v.push_back(ref_value(f, code));
    if (v.back() == f.max) break;
  }
  return v;
}

struct RefResult {
  bool nan;       // the result is a NaN (any NaN pattern)
  uint32_t code;  // otherwise the exact pattern, sign included
};

// Round x to the format: nearest, ties to even code. Overflow: saturate -> ±max;
// otherwise ±inf, or NaN when the format has no inf.
inline RefResult ref_round(double x, const RefFormat& f, const std::vector<double>& vals,
                           bool saturate) {
  if (std::isnan(x)) return {true, 0};
  const uint32_t sign = std::signbit(x) ? 1u << (f.E + f.M) : 0;
  const double a = std::fabs(x);
  const uint32_t max_code = uint32_t(vals.size() - 1);
  const uint32_t inf_code = ((1u << f.E) - 1) << f.M;
  const RefResult overflow = saturate ? RefResult{false, sign | max_code}
                             : f.has_inf ? RefResult{false, sign | inf_code}
                                         : RefResult{true, 0};
  if (std::isinf(a)) return overflow;
  // Past the max the next (virtual) value is max + ulp(max); halfway is the threshold.
  const double ulp_max = vals[max_code] - vals[max_code - 1];
  const double threshold = vals[max_code] + ulp_max / 2;
  if (a > threshold) return overflow;
  if (a == threshold) return (max_code % 2 == 0) ? RefResult{false, sign | max_code} : overflow;
  if (a >= vals[max_code]) return {false, sign | max_code};
  // vals[i] <= a < vals[i + 1]
  size_t i = size_t(std::upper_bound(vals.begin(), vals.end(), a) - vals.begin()) - 1;
  double below = a - vals[i], above = vals[i + 1] - a;
  uint32_t code = below < above ? uint32_t(i) : above < below ? uint32_t(i + 1)
                                 : (i % 2 == 0 ? uint32_t(i) : uint32_t(i + 1));
  return {false, sign | code};
}

// For FP32-layout formats with fewer mantissa bits (BF16: drop 16, TF32: drop 13):
// the result as FP32 bits (low `drop` bits zero). NaN -> returns a NaN pattern (caller
// checks only NaN-ness).
inline uint32_t ref_round_keep_bits(float x, int drop) {
  uint32_t u = bits_of(x);
  if (std::isnan(x)) return 0x7fc00000u;
  const uint32_t sign = u & 0x80000000u, mag = u & 0x7fffffffu;
  if (mag == 0x7f800000u) return u;  // ±inf
  const uint32_t step = 1u << drop;
  const uint32_t down = mag & ~(step - 1);  // toward zero
  const uint32_t up = down + step;          // away from zero (may be the inf pattern)
  if (down == mag) return u;                // already representable
  const double a = std::fabs(double(x));
  const double lo = double(float_of(down));
  // The inf pattern stands for 2^128 here: IEEE rounds as if the exponent were unbounded,
  // then overflows to inf.
  const double hi = up >= 0x7f800000u ? std::ldexp(1.0, 128) : double(float_of(up));
  double below = a - lo, above = hi - a;  // exact: a, lo, hi share an exponent (or hi doubles it)
  bool pick_up = above < below || (above == below && (down & step));  // tie: even kept bit
  uint32_t r = pick_up ? up : down;
  if (r > 0x7f800000u) r = 0x7f800000u;
  return sign | r;
}

// ---- sweeps ---------------------------------------------------------------------------------
// Records the smallest failing input of a parallel sweep and how many failed.
struct Mismatches {
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> first{~uint64_t{0}};
  void add(uint64_t input) {
    count.fetch_add(1, std::memory_order_relaxed);
    uint64_t cur = first.load();
    while (input < cur && !first.compare_exchange_weak(cur, input)) {
    }
  }
};

inline std::string hex(uint64_t v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", digits, (unsigned long long)v);
  return buf;
}

}  // namespace ref
