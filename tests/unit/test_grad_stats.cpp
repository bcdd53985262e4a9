// GradStats: the log2 histogram and FP16 counts of a gradient, and the lost-update test,
// each against a reference computed another way.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "framework/amp/grad_stats.h"

using hg::amp::GradHistogram;

TEST_CASE("hand-placed values land in the bins and FP16 counts the doc defines") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> g = {
      1.0f,                 // 2^0: bin 0
      -0.75f,               // floor(log2 0.75) = -1
      std::ldexp(1.f, -24), // FP16's smallest subnormal: subnormal, bin -24
      std::ldexp(1.f, -25), // below it: FP16 underflow, bin -25
      std::ldexp(1.f, -14), // FP16's smallest normal: neither subnormal nor underflow
      std::ldexp(1.5f, -15),// subnormal
      65504.0f,             // FP16 max: not overflow, bin 15
      65520.0f,             // above FP16 max: overflow, bin 15
      1.0e5f,               // overflow, bin 16
      std::ldexp(1.f, 20),  // overflow, above the window
      std::ldexp(1.f, -50), // underflow, below the window
      0.0f, -0.0f, inf, -inf, nan};
  GradHistogram h("w", 1.0);
  h.add(g.data(), int64_t(g.size()));
  auto bin = [&](int e) { return h.counts[size_t(e - h.exp_min)]; };
  CHECK(h.counts.size() == 57);
  CHECK(bin(0) == 1);
  CHECK(bin(-1) == 1);
  CHECK(bin(-24) == 1);
  CHECK(bin(-25) == 1);
  CHECK(bin(-14) == 1);
  CHECK(bin(-15) == 1);
  CHECK(bin(15) == 2);
  CHECK(bin(16) == 1);
  CHECK(h.above == 1);
  CHECK(h.below == 1);
  CHECK(h.zeros == 2);
  CHECK(h.inf == 2);
  CHECK(h.nan == 1);
  CHECK(h.fp16_underflow == 2);  // 2^-25, 2^-50
  CHECK(h.fp16_subnormal == 2);  // 2^-24, 1.5·2^-15
  CHECK(h.fp16_overflow == 3);   // 65520, 1e5, 2^20
  CHECK(h.total == int64_t(g.size()));
  int64_t in_bins = 0;
  for (auto c : h.counts) in_bins += c;
  CHECK(in_bins + h.below + h.above + h.zeros + h.inf + h.nan == h.total);
}

TEST_CASE("random gradients: bins match floor(log2|g|) computed in double") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> expo(-60.0, 25.0);
  std::vector<float> g(20000);
  for (auto& v : g) v = float(std::exp2(expo(rng))) * (rng() % 2 ? 1.f : -1.f);
  GradHistogram h("w", 1.0);
  h.add(g.data(), int64_t(g.size()));
  std::vector<int64_t> ref(57, 0);
  int64_t below = 0, above = 0, under = 0, sub = 0, over = 0;
  for (float v : g) {
    const double a = std::fabs(double(v));
    const int e = int(std::floor(std::log2(a)));
    if (e < -40) ++below;
    else if (e > 16) ++above;
    else ++ref[size_t(e + 40)];
    if (a < std::exp2(-24)) ++under;
    else if (a < std::exp2(-14)) ++sub;
    else if (a > 65504.0) ++over;
  }
  CHECK(h.counts == ref);
  CHECK(h.below == below);
  CHECK(h.above == above);
  CHECK(h.fp16_underflow == under);
  CHECK(h.fp16_subnormal == sub);
  CHECK(h.fp16_overflow == over);
}

TEST_CASE("the event has the fields of docs/run-log.md") {
  GradHistogram h("fc1.weight", 65536.0);
  float v[] = {1.0f, 0.0f};
  h.add(v, 2);
  auto j = h.to_event(50);
  CHECK(j["type"] == "grad_hist");
  CHECK(j["step"] == 50);
  CHECK(j["param"] == "fc1.weight");
  CHECK(j["scale"] == 65536.0);
  CHECK(j["exp_min"] == -40);
  CHECK(j["exp_max"] == 16);
  CHECK(j["counts"].size() == 57);
  for (const char* k : {"below", "above", "zeros", "fp16_underflow", "fp16_subnormal",
                        "fp16_overflow", "inf", "nan", "total"})
    CHECK(j.contains(k));
  CHECK_FALSE(j.contains("lost_update_fraction"));
  h.lost_update_fraction = 0.25;
  CHECK(h.to_event(50)["lost_update_fraction"] == 0.25);
}

// ---- lost updates -------------------------------------------------------------------
// Reference for FP16: every finite FP16 value built from its fields, written here
// independently of framework/dtype; round w + d to the nearest (ties to the even mantissa).
static std::vector<double> all_fp16_values() {
  std::vector<double> v;
  for (int field = 0; field < 31; ++field)
    for (int mant = 0; mant < 1024; ++mant) {
      const double x = field == 0 ? std::ldexp(mant, -24) : std::ldexp(1024 + mant, field - 25);
      v.push_back(x);
      if (x != 0) v.push_back(-x);
    }
  std::sort(v.begin(), v.end());
  return v;
}

static double round_to_fp16_ref(double x, const std::vector<double>& vals) {
  auto it = std::lower_bound(vals.begin(), vals.end(), x);
  if (it != vals.end() && *it == x) return x;
  const double hi = *it, lo = *(it - 1);
  if (x - lo < hi - x) return lo;
  if (hi - x < x - lo) return hi;
  // tie: the one whose bit pattern is even; the index parity in a sorted list of the
  // positive (or negative) values follows the mantissa's last bit.
  const double mag_lo = std::fabs(lo), mag_hi = std::fabs(hi);
  auto odd = [](double m) {
    const int e = m < std::ldexp(1.0, -14) ? -14 : std::ilogb(m);
    return std::fmod(m / std::ldexp(1.0, e - 10), 2.0) != 0.0;
  };
  return odd(mag_lo) ? hi : (odd(mag_hi) ? lo : lo);
}

TEST_CASE("2048 + 1 = 2048 in FP16, and 2048 + 2 = 2050") {
  CHECK(hg::amp::update_is_lost(2048.0, 1.0, hg::kFP16));
  CHECK_FALSE(hg::amp::update_is_lost(2048.0, 2.0, hg::kFP16));
  CHECK_FALSE(hg::amp::update_is_lost(2048.0, -1.0, hg::kFP16));  // 2047 exists below 2048
  CHECK(hg::amp::update_is_lost(2048.0, -0.5, hg::kFP16));        // tie: 2048 has even mantissa
  CHECK_FALSE(hg::amp::update_is_lost(2048.0, 1.0, hg::kFP32));
  CHECK(hg::amp::update_is_lost(1.0, 1e-4, hg::kFP16));  // 1e-4 < 2^-11
  CHECK_FALSE(hg::amp::update_is_lost(1.0, 1e-4, hg::kFP32));
  CHECK(hg::amp::update_is_lost(1.0, 1e-3, hg::kBF16));  // BF16: ULP at 1 is 2^-7
}

TEST_CASE("update_is_lost agrees with rounding to FP16 over many weights and steps") {
  const auto vals = all_fp16_values();
  std::mt19937 rng(3);
  std::uniform_int_distribution<size_t> pick(1, vals.size() - 2);
  std::uniform_real_distribution<double> expo(-30.0, 2.0);
  int mismatches = 0, lost = 0, checked = 0;
  for (int t = 0; t < 200000; ++t) {
    const double w = vals[pick(rng)];
    if (std::fabs(w) > 30000) continue;  // keep w + d inside the finite range
    // Steps of various sizes, plus exact half-ULP ties.
    double d = std::exp2(expo(rng)) * (rng() % 2 ? 1 : -1);
    if (t % 5 == 0) {
      const int e = w == 0 ? -14 : std::max(std::ilogb(w), -14);
      d = std::ldexp(1.0, e - 11) * (rng() % 2 ? 1 : -1) * (t % 10 == 0 ? 0.5 : 1.0);
    }
    const bool ref = round_to_fp16_ref(w + d, vals) == w;  // w + d is exact in double here
    const bool got = hg::amp::update_is_lost(w, d, hg::kFP16);
    if (ref != got && ++mismatches <= 5)
      MESSAGE("w=" << w << " d=" << d << " ref lost=" << ref << " got lost=" << got);
    lost += ref;
    ++checked;
  }
  MESSAGE(checked << " cases, " << lost << " lost, " << mismatches << " mismatches");
  CHECK(mismatches == 0);
  CHECK(lost > 1000);             // the sweep exercised both outcomes
  CHECK(checked - lost > 1000);
}

TEST_CASE("lost_update_fraction counts only elements that move") {
  std::vector<float> w = {2048.f, 2048.f, 1.f, 5.f};
  std::vector<float> d = {1.f, 2.f, 1e-4f, 0.f};
  CHECK(hg::amp::lost_update_fraction(w.data(), d.data(), 4, hg::kFP16) == doctest::Approx(2.0 / 3));  // 2048+1 and 1+1e-4
  CHECK(hg::amp::lost_update_fraction(w.data(), d.data(), 4, hg::kFP32) == 0.0);
}
