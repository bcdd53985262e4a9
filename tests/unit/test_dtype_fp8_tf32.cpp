// FP8 (E4M3, E5M2) and TF32 against independent references: a strided sweep over all
// float32 patterns plus every boundary (each representable value, each midpoint between
// neighbours, and the floats next to them), in both overflow modes for FP8.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "framework/dtype/decompose.h"
#include "framework/dtype/fp8.h"
#include "framework/dtype/tf32.h"
#include "tests/unit/test_dtype_reference.h"

namespace {

// Floats near c: c itself and its two float neighbours on each side, both signs.
void add_around(std::vector<float>& out, float c) {
  float lo = c, hi = c;
  out.push_back(c);
  out.push_back(-c);
  for (int k = 0; k < 2; ++k) {
    lo = std::nextafter(lo, -INFINITY);
    hi = std::nextafter(hi, INFINITY);
    for (float v : {lo, hi}) {
      out.push_back(v);
      out.push_back(-v);
    }
  }
}

std::vector<float> strided_floats(uint32_t stride) {
  std::vector<float> v;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += stride) v.push_back(ref::float_of(uint32_t(u)));
  for (float s : {0.0f, INFINITY, NAN, 3.0e38f, 1e-45f}) add_around(v, s);
  return v;
}

using ToFp8 = uint8_t (*)(float, hg::Fp8Overflow);

void check_fp8(const ref::RefFormat& f, ToFp8 to_fp8, float (*from_fp8)(uint8_t)) {
  const std::vector<double> vals = ref::ref_values(f);
  const uint32_t sign_bit = 1u << (f.E + f.M);
  auto is_nan = [&](uint8_t c) {
    uint32_t e = (c >> f.M) & ((1u << f.E) - 1), m = c & ((1u << f.M) - 1);
    if (!f.has_inf) return e == (1u << f.E) - 1 && m == (1u << f.M) - 1;  // E4M3: S.1111.111
    return e == (1u << f.E) - 1 && m != 0;
  };

  // Decoding: every finite code gives the value the definition says.
  int decode_bad = 0;
  for (uint32_t code = 0; code < 256; ++code) {
    float v = from_fp8(uint8_t(code));
    uint32_t mag = code & (sign_bit - 1);
    if (is_nan(uint8_t(code))) {
      decode_bad += !std::isnan(v);
    } else if (mag < vals.size()) {
      double want = (code & sign_bit) ? -vals[mag] : vals[mag];
      decode_bad += double(v) != want || std::signbit(v) != bool(code & sign_bit);
    } else {
      decode_bad += !(f.has_inf && std::isinf(v));  // the only other codes: ±inf
    }
  }
  INFO(f.name, " decode");
  CHECK(decode_bad == 0);

  // Encoding: a strided sweep plus everything around each value and each midpoint.
  std::vector<float> inputs = strided_floats(65537);
  for (size_t i = 0; i < vals.size(); ++i) {
    add_around(inputs, float(vals[i]));
    double next = i + 1 < vals.size() ? vals[i + 1] : vals[i] + (vals[i] - vals[i - 1]);
    add_around(inputs, float((vals[i] + next) / 2));  // exact in float
  }
  for (bool saturate : {true, false}) {
    const hg::Fp8Overflow mode = saturate ? hg::Fp8Overflow::Saturate : hg::Fp8Overflow::NonSaturating;
    ref::Mismatches bad;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(inputs.size()); ++i) {
      const float x = inputs[size_t(i)];
      ref::RefResult r = ref::ref_round(double(x), f, vals, saturate);
      uint8_t got = to_fp8(x, mode);
      if (r.nan ? !is_nan(got) : got != r.code) bad.add(uint64_t(i));
    }
    if (bad.count) {
      float x = inputs[bad.first];
      ref::RefResult r = ref::ref_round(double(x), f, vals, saturate);
      std::printf("%s %s: first mismatch: float %s (%.9g): got %s, reference %s\n", f.name,
                  saturate ? "saturating" : "non-saturating", ref::hex(ref::bits_of(x), 8).c_str(),
                  double(x), ref::hex(to_fp8(x, mode), 2).c_str(),
                  r.nan ? "NaN" : ref::hex(r.code, 2).c_str());
    }
    INFO(f.name, saturate ? " saturating" : " non-saturating", ", ", inputs.size(), " inputs");
    CHECK(bad.count == 0);
  }
}

}  // namespace

TEST_CASE("dtype fp8 e4m3: strided sweep and all boundaries equal the table reference, both modes") {
  check_fp8(ref::kE4M3, hg::float_to_e4m3, hg::e4m3_to_float);
  // The OCP rules, spelled out.
  CHECK(hg::e4m3_to_float(0x7e) == 448.0f);
  CHECK(std::isnan(hg::e4m3_to_float(0x7f)));
  CHECK(std::isnan(hg::e4m3_to_float(0xff)));
  CHECK(hg::e4m3_to_float(0x78) == 256.0f);  // S.1111.000 is a finite value, not inf
  CHECK(hg::float_to_e4m3(1e6f) == 0x7e);    // saturating is the default
  CHECK(hg::float_to_e4m3(-INFINITY) == 0xfe);
  CHECK(hg::float_to_e4m3(INFINITY, hg::Fp8Overflow::NonSaturating) == 0x7f);  // NaN: no inf
}

TEST_CASE("dtype fp8 e5m2: strided sweep and all boundaries equal the table reference, both modes") {
  check_fp8(ref::kE5M2, hg::float_to_e5m2, hg::e5m2_to_float);
  CHECK(hg::e5m2_to_float(0x7b) == 57344.0f);
  CHECK(std::isinf(hg::e5m2_to_float(0x7c)));
  CHECK(hg::float_to_e5m2(61440.0f, hg::Fp8Overflow::NonSaturating) == 0x7c);  // tie -> even = inf
  CHECK(hg::float_to_e5m2(61440.0f) == 0x7b);
}

TEST_CASE("dtype fp8: every NaN becomes 0x7f in both formats, as NVIDIA's conversions write it") {
  // cuda_fp8.hpp (__nv_cvt_float_to_fp8) replaces any NaN by 0x7fffffff before converting:
  // sign and payload are gone, and both formats get 0x7f. (An overflow keeps its sign: a
  // non-saturating E4M3 cast of -1000 is 0xff, also a NaN, as in cuda_fp8.hpp.)
  const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fbfffffu, 0xffffffffu};
  for (uint32_t bits : nans)
    for (hg::Fp8Overflow mode : {hg::Fp8Overflow::Saturate, hg::Fp8Overflow::NonSaturating}) {
      const float x = ref::float_of(bits);
      INFO("NaN 0x", std::hex, bits);
      CHECK(hg::float_to_e4m3(x, mode) == 0x7f);
      CHECK(hg::float_to_e5m2(x, mode) == 0x7f);
    }
  // The same from a double (what chapter 04 and the viewer's bit explorer encode).
  for (double x : {std::nan(""), -std::nan("")}) {
    CHECK(hg::encode(x, hg::kE4M3) == 0x7f);
    CHECK(hg::encode(x, hg::kE5M2) == 0x7f);
  }
  CHECK(hg::float_to_e4m3(-1000.0f, hg::Fp8Overflow::NonSaturating) == 0xff);
  // Not FP8: FP16 and BF16 keep the NaN's sign and top payload bits, as F16C does.
  CHECK(hg::encode(-std::nan(""), hg::kFP16) == 0xfe00);
}

TEST_CASE("dtype tf32: strided sweep and boundaries equal the keep-10-bits reference") {
  std::vector<float> inputs = strided_floats(4099);
  // Ties and their neighbours in several binades: low 13 bits exactly 0x1000, both parities.
  for (uint32_t e : {1u, 2u, 100u, 127u, 128u, 200u, 254u})
    for (uint32_t m : {0x000000u, 0x002000u, 0x7fe000u, 0x3fe000u, 0x400000u}) {
      add_around(inputs, ref::float_of(e << 23 | m | 0x1000u));
      add_around(inputs, ref::float_of(e << 23 | m));
    }
  for (uint32_t m = 0; m < 0x4000; m += 0x800) add_around(inputs, ref::float_of(m));  // subnormals
  ref::Mismatches bad;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(inputs.size()); ++i) {
    const float x = inputs[size_t(i)];
    const float got = hg::round_to_tf32(x);
    bool ok = std::isnan(x) ? std::isnan(got)
                            : ref::bits_of(got) == ref::ref_round_keep_bits(x, 13);
    if (!ok) bad.add(uint64_t(i));
  }
  if (bad.count) {
    float x = inputs[bad.first];
    std::printf("tf32: first mismatch: float %s (%.9g): got %s, reference %s\n",
                ref::hex(ref::bits_of(x), 8).c_str(), double(x),
                ref::hex(ref::bits_of(hg::round_to_tf32(x)), 8).c_str(),
                ref::hex(ref::ref_round_keep_bits(x, 13), 8).c_str());
  }
  INFO(inputs.size(), " inputs");
  CHECK(bad.count == 0);
  CHECK(hg::round_to_tf32(1.0f + 0x1p-11f) == 1.0f);                   // tie -> even (down)
  CHECK(hg::round_to_tf32(1.0f + 3 * 0x1p-11f) == 1.0f + 0x1p-9f);     // tie -> even (up)
  CHECK(std::isinf(hg::round_to_tf32(3.4028235e38f)));                  // FLT_MAX rounds up
}
