// FloatFormat, encode/decode and decompose.
//   - the derived quantities of each format equal the numbers in the specifications
//   - a table of named boundary cases per format (largest finite, first value that rounds
//     to inf, smallest subnormal, the ties at half of it, ties to even), through encode()
//     and through the format's own float conversion
//   - decompose on 0.1, 1/3, 65504, 2^-24, NaN, -0 in every format
//   - exact decimal expansions, and encode(double, FP32) equals the hardware double->float
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/dtype/bfloat16.h"
#include "framework/dtype/float_format.h"
#include "framework/dtype/fp8.h"
#include "framework/dtype/half.h"
#include "framework/dtype/tf32.h"
#include "tests/unit/test_dtype_reference.h"

namespace {
const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

bool same(double a, double b) {  // equal, NaN equal to NaN, and -0 different from +0
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// The format's own float conversion (the one the engine uses), as a float -> float rounding.
float round_with_float_api(float x, const hg::FloatFormat& f) {
  if (&f == &hg::kFP32) return x;
  if (&f == &hg::kTF32) return hg::round_to_tf32(x);
  if (&f == &hg::kFP16) return hg::half_bits_to_float(hg::float_to_half_bits(x));
  if (&f == &hg::kBF16) return hg::bf16_bits_to_float(hg::float_to_bf16_bits(x));
  if (&f == &hg::kE4M3) return hg::e4m3_to_float(hg::float_to_e4m3(x, hg::Fp8Overflow::NonSaturating));
  return hg::e5m2_to_float(hg::float_to_e5m2(x, hg::Fp8Overflow::NonSaturating));
}

struct Spec {
  const hg::FloatFormat* f;
  int total_bits;
  double max, min_normal, min_subnormal, epsilon;
};
}  // namespace

TEST_CASE("dtype format table: derived quantities equal the specifications") {
  // Numbers from IEEE 754 (binary32, binary16), the BF16/TF32 definitions and the OCP FP8
  // specification, written out here rather than computed.
  const Spec specs[] = {
      {&hg::kFP32, 32, 3.4028234663852886e38, 0x1p-126, 0x1p-149, 0x1p-23},
      {&hg::kTF32, 19, 3.4011621342146535e38, 0x1p-126, 0x1p-136, 0x1p-10},
      {&hg::kFP16, 16, 65504.0, 0x1p-14, 0x1p-24, 0x1p-10},
      {&hg::kBF16, 16, 3.3895313892515355e38, 0x1p-126, 0x1p-133, 0x1p-7},
      {&hg::kE4M3, 8, 448.0, 0x1p-6, 0x1p-9, 0x1p-3},
      {&hg::kE5M2, 8, 57344.0, 0x1p-14, 0x1p-16, 0x1p-2},
  };
  REQUIRE(hg::all_formats().size() == 6);
  for (const Spec& s : specs) {
    INFO(s.f->name);
    CHECK(s.f->total_bits() == s.total_bits);
    CHECK(s.f->max_finite() == s.max);
    CHECK(s.f->min_normal() == s.min_normal);
    CHECK(s.f->min_subnormal() == s.min_subnormal);
    CHECK(s.f->epsilon() == s.epsilon);
    CHECK(hg::find_format(s.f->id) == s.f);
    // The largest finite value decodes from its bits, and one step up is not finite.
    CHECK(hg::decode(s.f->max_finite_bits(), *s.f) == s.max);
    CHECK(!std::isfinite(hg::decode(s.f->max_finite_bits() + 1, *s.f)));
  }
  CHECK(hg::find_format("fp12") == nullptr);
  CHECK(hg::kFP16.decimal_digits() == doctest::Approx(3.31).epsilon(0.01));
  CHECK(hg::kFP32.decimal_digits() == doctest::Approx(7.22).epsilon(0.01));
}

TEST_CASE("dtype boundary cases per format: largest finite, overflow, subnormals, ties to even") {
  struct Case {
    const hg::FloatFormat* f;
    const char* what;
    double input, stored;  // stored: the value the format keeps (NonSaturating overflow)
  };
  const Case cases[] = {
      // FP16: max 65504 = 1.1111111111b × 2^15, spacing 32 near it.
      {&hg::kFP16, "largest finite", 65504, 65504},
      {&hg::kFP16, "just below the inf threshold", 65519.99609375, 65504},
      {&hg::kFP16, "first value that rounds to inf (tie, max is odd)", 65520, kInf},
      {&hg::kFP16, "smallest normal", 0x1p-14, 0x1p-14},
      {&hg::kFP16, "smallest subnormal", 0x1p-24, 0x1p-24},
      {&hg::kFP16, "half the smallest subnormal: tie -> 0 (even)", 0x1p-25, 0},
      {&hg::kFP16, "just above half the smallest subnormal", 0x1.000002p-25, 0x1p-24},
      {&hg::kFP16, "1.5 x smallest subnormal: tie -> 2 (even)", 0x3p-25, 0x1p-23},
      {&hg::kFP16, "2.5 x smallest subnormal: tie -> 2 (even)", 0x5p-25, 0x1p-23},
      {&hg::kFP16, "2049: tie -> 2048 (even)", 2049, 2048},
      {&hg::kFP16, "2051: tie -> 2052 (even)", 2051, 2052},
      {&hg::kFP16, "1 + 2^-11: tie -> 1", 1 + 0x1p-11, 1},
      {&hg::kFP16, "negative overflow", -65536, -kInf},
      {&hg::kFP16, "negative underflow keeps the sign", -0x1p-26, -0.0},
      // BF16: FP32's exponent range, 7 mantissa bits.
      {&hg::kBF16, "largest finite", 0x1.fep127, 0x1.fep127},
      {&hg::kBF16, "first value that rounds to inf", 0x1.ffp127, kInf},
      {&hg::kBF16, "just below it", 0x1.fefffep127, 0x1.fep127},
      {&hg::kBF16, "smallest subnormal", 0x1p-133, 0x1p-133},
      {&hg::kBF16, "half the smallest subnormal: tie -> 0", 0x1p-134, 0},
      {&hg::kBF16, "1.5 x smallest subnormal: tie -> 2", 0x3p-134, 0x1p-132},
      {&hg::kBF16, "1 + 2^-8: tie -> 1", 1 + 0x1p-8, 1},
      {&hg::kBF16, "1 + 3 x 2^-8: tie -> 1 + 2^-6", 1 + 0x3p-8, 1 + 0x1p-6},
      {&hg::kBF16, "257: tie -> 256", 257, 256},
      // TF32: FP32's range, 10 mantissa bits.
      {&hg::kTF32, "largest finite", 0x1.ffcp127, 0x1.ffcp127},
      {&hg::kTF32, "first value that rounds to inf", 0x1.ffep127, kInf},
      {&hg::kTF32, "smallest subnormal", 0x1p-136, 0x1p-136},
      {&hg::kTF32, "half the smallest subnormal: tie -> 0", 0x1p-137, 0},
      {&hg::kTF32, "1 + 2^-11: tie -> 1", 1 + 0x1p-11, 1},
      {&hg::kTF32, "2049: tie -> 2048", 2049, 2048},
      // FP32 (through encode from double).
      {&hg::kFP32, "largest finite", 0x1.fffffep127, 0x1.fffffep127},
      {&hg::kFP32, "first value that rounds to inf", 0x1.ffffffp127, kInf},
      {&hg::kFP32, "smallest subnormal", 0x1p-149, 0x1p-149},
      {&hg::kFP32, "half the smallest subnormal: tie -> 0", 0x1p-150, 0},
      {&hg::kFP32, "1 + 2^-24: tie -> 1", 1 + 0x1p-24, 1},
      {&hg::kFP32, "2^24 + 1: tie -> 2^24", 0x1p24 + 1, 0x1p24},
      // E4M3 (OCP): no inf. Max 448 = 1.110b × 2^8; 1.111b × 2^8 is the NaN pattern.
      {&hg::kE4M3, "largest finite", 448, 448},
      {&hg::kE4M3, "464: tie between 448 and (480) -> 448 (even)", 464, 448},
      {&hg::kE4M3, "first value past it overflows to NaN", 464.0000305175781, kNaN},
      {&hg::kE4M3, "256: the top binade is finite", 256, 256},
      {&hg::kE4M3, "smallest subnormal", 0x1p-9, 0x1p-9},
      {&hg::kE4M3, "half the smallest subnormal: tie -> 0", 0x1p-10, 0},
      {&hg::kE4M3, "1.5 x smallest subnormal: tie -> 2", 0x3p-10, 0x1p-8},
      {&hg::kE4M3, "17: tie -> 16 (even)", 17, 16},
      {&hg::kE4M3, "19: tie -> 20 (even)", 19, 20},
      // E5M2: IEEE-like. Max 57344 = 1.11b × 2^15.
      {&hg::kE5M2, "largest finite", 57344, 57344},
      {&hg::kE5M2, "first value that rounds to inf (tie, max is odd)", 61440, kInf},
      {&hg::kE5M2, "just below it", 61439.99609375, 57344},
      {&hg::kE5M2, "smallest subnormal", 0x1p-16, 0x1p-16},
      {&hg::kE5M2, "half the smallest subnormal: tie -> 0", 0x1p-17, 0},
      {&hg::kE5M2, "9: tie -> 8 (even)", 9, 8},
      {&hg::kE5M2, "11: tie -> 12 (even)", 11, 12},
  };
  int bad = 0;
  for (const Case& c : cases) {
    double via_encode = hg::decode(hg::encode(c.input, *c.f), *c.f);
    bool ok = same(via_encode, c.stored);
    if (float(c.input) == c.input || std::isinf(c.stored)) {
      // The format's own float conversion agrees (inputs that are floats, or that overflow
      // as floats do too).
      float x = float(c.input);
      if (double(x) == c.input) ok = ok && same(double(round_with_float_api(x, *c.f)), c.stored);
    }
    if (!ok) {
      ++bad;
      std::printf("%s, %s: input %.17g -> %.17g (float path %.17g), expected %.17g\n", c.f->name,
                  c.what, c.input, via_encode, double(round_with_float_api(float(c.input), *c.f)),
                  c.stored);
    }
  }
  CHECK(bad == 0);
  // Saturating mode clamps instead.
  CHECK(hg::decode(hg::encode(1e9, hg::kE4M3, hg::Fp8Overflow::Saturate), hg::kE4M3) == 448);
  CHECK(hg::decode(hg::encode(-1e9, hg::kE5M2, hg::Fp8Overflow::Saturate), hg::kE5M2) == -57344);
  CHECK(hg::decode(hg::encode(1e9, hg::kFP16, hg::Fp8Overflow::Saturate), hg::kFP16) == 65504);
}

TEST_CASE("dtype decompose: 0.1, 1/3, 65504, 2^-24, NaN, -0 in every format") {
  const std::vector<double> inputs = {0.1, 1.0 / 3.0, 65504, 0x1p-24, kNaN, -0.0};
  for (const hg::FloatFormat* f : hg::all_formats()) {
    for (double x : inputs) {
      INFO(f->name, " input ", x);
      hg::Decomposed d = hg::decompose(x, *f);
      CHECK(d.format == f);
      CHECK(same(d.input, x));
      // The fields put back together give the value (the definition, written out here).
      if (d.cls == hg::FloatClass::Normal || d.cls == hg::FloatClass::Subnormal ||
          d.cls == hg::FloatClass::Zero) {
        double lead = d.cls == hg::FloatClass::Normal ? 1.0 : 0.0;
        double v = std::ldexp(lead + std::ldexp(double(d.mantissa_field), -f->mantissa_bits),
                              d.unbiased_exponent);
        CHECK(same(d.sign ? -v : v, d.value));
        CHECK(d.bits == ((uint64_t(d.sign) << (f->total_bits() - 1)) |
                         (uint64_t(d.exponent_field) << f->mantissa_bits) | d.mantissa_field));
        // Correct rounding: at most half an ulp away, and the neighbours are one ulp off
        // (or the value sits at a power of two / zero, where the gap below is smaller).
        CHECK(d.error_ulps <= 0.5);
        CHECK(d.abs_error == std::fabs(d.value - x));
        CHECK(d.next_up > d.value);
        CHECK(d.next_down < d.value);
        if (d.sign == 0 && std::isfinite(d.next_up)) CHECK(d.next_up - d.value == d.ulp);
        // The exact decimal string reads back as the same double.
        CHECK(same(std::strtod(d.exact_decimal.c_str(), nullptr), d.value));
      }
      // The stored value is what the independent references round to (FP32: the hardware).
      if (!std::isnan(x)) {
        double want;
        if (f == &hg::kFP32) {
          want = double(float(x));
        } else {
          const ref::RefFormat& rf = f == &hg::kFP16 ? ref::kFP16 : f == &hg::kBF16 ? ref::kBF16
                                     : f == &hg::kTF32 ? ref::kTF32 : f == &hg::kE4M3 ? ref::kE4M3
                                                                                      : ref::kE5M2;
          const std::vector<double> vals = ref::ref_values(rf);
          ref::RefResult r = ref::ref_round(x, rf, vals, false);
          uint32_t sign = 1u << (rf.E + rf.M), mag = r.code & (sign - 1);
          want = r.nan ? kNaN : mag >= vals.size() ? kInf : vals[mag];
          if (!r.nan && (r.code & sign)) want = -want;
        }
        CHECK(same(d.value, want));
      }
    }
    // Specific facts per value.
    hg::Decomposed nan = hg::decompose(kNaN, *f);
    CHECK(nan.cls == hg::FloatClass::NaN);
    CHECK(std::isnan(nan.value));
    CHECK(std::isnan(nan.abs_error));
    hg::Decomposed mz = hg::decompose(-0.0, *f);
    CHECK(mz.cls == hg::FloatClass::Zero);
    CHECK(mz.sign == 1);
    CHECK(mz.bits == f->sign_bit());
    CHECK(mz.exact_decimal == "-0");
    CHECK(mz.abs_error == 0);
    CHECK(mz.next_up == f->min_subnormal());
    CHECK(mz.next_down == -f->min_subnormal());
    hg::Decomposed tiny = hg::decompose(0x1p-24, *f);
    CHECK(tiny.cls == (f == &hg::kFP16 ? hg::FloatClass::Subnormal
                       : f == &hg::kE4M3 || f == &hg::kE5M2 ? hg::FloatClass::Zero
                                                           : hg::FloatClass::Normal));
  }
  // A few stored values written out (from the formats' definitions, checked by hand).
  CHECK(hg::decompose(0.1, hg::kFP16).exact_decimal == "0.0999755859375");
  CHECK(hg::decompose(0.1, hg::kFP16).bits == 0x2e66);
  CHECK(hg::decompose(0.1, hg::kFP32).exact_decimal == "0.100000001490116119384765625");
  CHECK(hg::decompose(0.1, hg::kBF16).exact_decimal == "0.10009765625");
  CHECK(hg::decompose(1.0 / 3.0, hg::kFP16).exact_decimal == "0.333251953125");
  CHECK(hg::decompose(65504, hg::kFP16).cls == hg::FloatClass::Normal);
  CHECK(hg::decompose(65504, hg::kFP16).next_up == kInf);
  CHECK(hg::decompose(65504, hg::kFP16).ulp == 32);
  CHECK(hg::decompose(65504, hg::kE5M2).cls == hg::FloatClass::Inf);
  CHECK(hg::decompose(65504, hg::kE4M3).cls == hg::FloatClass::NaN);  // no inf in E4M3
  CHECK(hg::decompose(448, hg::kE4M3).next_up != hg::decompose(448, hg::kE4M3).next_up);  // NaN
  CHECK(hg::decompose(0x1p-24, hg::kFP16).exponent_field == 0);
  CHECK(hg::decompose(0x1p-24, hg::kFP16).mantissa_field == 1);
  CHECK(hg::decompose(0x1p-24, hg::kFP16).unbiased_exponent == -14);
  CHECK(hg::decompose(1.0, hg::kFP16).exponent_field == 15);
  CHECK(std::string(hg::to_string(hg::FloatClass::Subnormal)) == "subnormal");
  CHECK(hg::bits_string(0x3c00, hg::kFP16) == "0 01111 0000000000");
}

TEST_CASE("dtype exact_decimal and encode(double, FP32) against the hardware") {
  CHECK(hg::exact_decimal(0.1) == "0.1000000000000000055511151231257827021181583404541015625");
  CHECK(hg::exact_decimal(65504) == "65504");
  CHECK(hg::exact_decimal(0x1p-24) == "0.000000059604644775390625");
  CHECK(hg::exact_decimal(-2.5) == "-2.5");
  CHECK(hg::exact_decimal(0x1p70) == "1180591620717411303424");
  CHECK(hg::exact_decimal(kInf) == "inf");
  // Random doubles over the whole range: strtod gives back the same double, and
  // encode(x, FP32) equals the hardware's double -> float conversion (round to nearest even).
  std::mt19937_64 rng(42);
  int bad_str = 0, bad_fp32 = 0;
  for (int i = 0; i < 200000; ++i) {
    uint64_t u = rng();
    // Half of them in the float range, where rounding is interesting.
    if (i % 2) u = (u & 0x800fffffffffffffull) | (uint64_t(rng() % 320 + 1023 - 160) << 52);
    double x;
    std::memcpy(&x, &u, 8);
    if (std::isnan(x)) continue;
    if (i < 20000 && std::strtod(hg::exact_decimal(x).c_str(), nullptr) != x) ++bad_str;
    float hw = float(x);
    if (hg::encode(x, hg::kFP32) != ref::bits_of(hw)) {
      if (bad_fp32++ == 0) std::printf("encode FP32 mismatch at %a\n", x);
    }
  }
  CHECK(bad_str == 0);
  CHECK(bad_fp32 == 0);
}

TEST_CASE("dtype decode/encode of every 8- and 16-bit pattern agree with the float conversions") {
  // decode() (through double) and the float functions (through float) are two routes to the
  // same value; encode(decode(b)) must give b back for every non-NaN pattern.
  struct Route {
    const hg::FloatFormat* f;
    float (*to_float)(uint32_t);
  };
  const Route routes[] = {
      {&hg::kFP16, [](uint32_t b) { return hg::half_bits_to_float(uint16_t(b)); }},
      {&hg::kBF16, [](uint32_t b) { return hg::bf16_bits_to_float(uint16_t(b)); }},
      {&hg::kE4M3, [](uint32_t b) { return hg::e4m3_to_float(uint8_t(b)); }},
      {&hg::kE5M2, [](uint32_t b) { return hg::e5m2_to_float(uint8_t(b)); }},
  };
  for (const Route& r : routes) {
    int bad = 0;
    uint32_t first = 0;
    for (uint32_t b = 0; b < (1u << r.f->total_bits()); ++b) {
      double d = hg::decode(b, *r.f);
      float x = r.to_float(b);
      bool nan = hg::classify_bits(b, *r.f) == hg::FloatClass::NaN;
      bool ok = nan ? std::isnan(d) && std::isnan(x)
                    : same(d, double(x)) && hg::encode(d, *r.f) == b &&
                          hg::decompose_bits(b, *r.f).value == d;
      if (!ok && bad++ == 0) first = b;
    }
    INFO(r.f->name, ": first mismatch at pattern ", ref::hex(first, 4));
    CHECK(bad == 0);
  }
}
