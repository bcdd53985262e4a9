// The loss-scale rule alone (framework/amp/scale_rule.h): scripted sequences of finite (F)
// and non-finite (I) steps against the scale/counter sequence the rule promises.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "framework/amp/scale_rule.h"

using hg::amp::ScaleRule;
using hg::amp::ScaleState;

static uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// Runs a script like "FFIFF" and returns the state after each step.
static std::vector<ScaleState> run_script(const std::string& script, const ScaleRule& rule) {
  std::vector<ScaleState> out;
  ScaleState s = hg::amp::initial_state(rule);
  for (char c : script) {
    s = hg::amp::next_scale(s, c == 'I', rule);
    out.push_back(s);
  }
  return out;
}

TEST_CASE("defaults are PyTorch's: 2^16, x2 after 2000, x0.5 on inf") {
  ScaleRule r;
  ScaleState s = hg::amp::initial_state(r);
  CHECK(s.scale == 65536.0f);
  CHECK(s.growth_tracker == 0);
  CHECK(r.growth_interval == 2000);
  CHECK(r.growth_factor == 2.0);
  CHECK(r.backoff_factor == 0.5);
}

TEST_CASE("2000 good steps double the scale, exactly at the 2000th") {
  ScaleRule r;
  ScaleState s = hg::amp::initial_state(r);
  for (int step = 1; step <= 1999; ++step) {
    s = hg::amp::next_scale(s, false, r);
    REQUIRE(s.scale == 65536.0f);
    REQUIRE(s.growth_tracker == step);
  }
  s = hg::amp::next_scale(s, false, r);  // the 2000th
  CHECK(s.scale == 131072.0f);
  CHECK(s.growth_tracker == 0);
}

TEST_CASE("an inf at step 1999 halves the scale and resets the counter") {
  ScaleRule r;
  ScaleState s = hg::amp::initial_state(r);
  for (int step = 1; step <= 1998; ++step) s = hg::amp::next_scale(s, false, r);
  CHECK(s.growth_tracker == 1998);
  s = hg::amp::next_scale(s, true, r);  // step 1999 overflows
  CHECK(s.scale == 32768.0f);
  CHECK(s.growth_tracker == 0);
  // Growth now needs another full 2000 finite steps, not the 2 that were missing.
  for (int step = 1; step <= 1999; ++step) s = hg::amp::next_scale(s, false, r);
  CHECK(s.scale == 32768.0f);
  CHECK(s.growth_tracker == 1999);
  s = hg::amp::next_scale(s, false, r);
  CHECK(s.scale == 65536.0f);
  CHECK(s.growth_tracker == 0);
}

TEST_CASE("a scripted sequence with a short interval") {
  ScaleRule r;
  r.init_scale = 8.0f;
  r.growth_interval = 3;
  // step:            1  2  3  4  5  6  7  8  9
  // script:          F  F  F  F  I  I  F  F  F
  // scale after:     8  8 16 16  8  4  4  4  8
  // tracker after:   1  2  0  1  0  0  1  2  0
  const std::vector<float> want_scale = {8, 8, 16, 16, 8, 4, 4, 4, 8};
  const std::vector<int64_t> want_tracker = {1, 2, 0, 1, 0, 0, 1, 2, 0};
  auto got = run_script("FFFFIIFFF", r);
  REQUIRE(got.size() == want_scale.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("step " << i + 1 << ": scale " << got[i].scale << " tracker " << got[i].growth_tracker);
    CHECK(got[i].scale == want_scale[i]);
    CHECK(got[i].growth_tracker == want_tracker[i]);
  }
}

TEST_CASE("min and max bounds clamp the scale") {
  ScaleRule r;
  r.init_scale = 4.0f;
  r.growth_interval = 1;
  r.min_scale = 1.0f;
  r.max_scale = 16.0f;
  auto up = run_script("FFFFF", r);  // 8 16 16 16 16
  CHECK(up[0].scale == 8.0f);
  CHECK(up[1].scale == 16.0f);
  CHECK(up[4].scale == 16.0f);
  auto down = run_script("IIIII", r);  // 2 1 1 1 1
  CHECK(down[0].scale == 2.0f);
  CHECK(down[1].scale == 1.0f);
  CHECK(down[4].scale == 1.0f);
}

TEST_CASE("growth that would overflow float is not applied") {
  ScaleRule r;
  r.init_scale = 3.0e38f;
  r.growth_interval = 1;
  auto s = run_script("F", r);
  CHECK(std::isfinite(s[0].scale));
  CHECK(s[0].scale == 3.0e38f);
  CHECK(s[0].growth_tracker == 0);
}

TEST_CASE("growth and backoff: the F32 scale times a double factor, rounded to F32 once, as PyTorch") {
  // PyTorch's _amp_update_scale_ computes `*current_scale * growth_factor` with the scale an
  // F32 and the factor a double (a Python float): a double product, rounded to F32 once.
  //   3 · 1.1 = 3.3000000000000003 (double)  ->  F32 0x40533333 (3.29999995)
  // Rounding the factor to F32 first (1.1f = 1.10000002384) makes the product 3.30000007,
  // exactly halfway between 0x40533333 and 0x40533334, and the tie goes to even: 0x40533334.
  ScaleRule grow;
  grow.init_scale = 3.0f;
  grow.growth_factor = 1.1;
  grow.growth_interval = 1;
  CHECK(bits(run_script("F", grow)[0].scale) == 0x40533333u);
  //   3 · 0.3 = 0.8999999999999999 (double)  ->  F32 0x3F666666 (0.899999976)
  // In F32: 0.3f = 0.300000012, and 3 · 0.3f = 0.900000036 is the F32 0x3F666667.
  ScaleRule back;
  back.init_scale = 3.0f;
  back.backoff_factor = 0.3;
  CHECK(bits(run_script("I", back)[0].scale) == 0x3F666666u);
}

TEST_CASE("the default bounds keep S and 1/S finite F32 numbers, so unscaling never multiplies by inf") {
  ScaleRule r;
  const float smallest_normal = std::numeric_limits<float>::min();  // 2^-126
  CHECK(r.min_scale == smallest_normal);
  CHECK(r.max_scale == std::numeric_limits<float>::max());
  CHECK(std::isfinite(float(1.0 / double(r.min_scale))));  // 2^126
  CHECK(float(1.0 / double(r.max_scale)) > 0.0f);           // 2.9e-39, a subnormal, not 0
  // 142 overflows in a row take 2^16 down to 2^-126; the scale stops there.
  auto s = run_script(std::string(200, 'I'), r);
  CHECK(s[141].scale == smallest_normal);
  CHECK(s.back().scale == smallest_normal);
  // Growth stops at max_scale like backoff at min_scale.
  ScaleRule top;
  top.init_scale = std::numeric_limits<float>::max() / 2;
  top.growth_interval = 1;
  top.growth_factor = 1.5;
  CHECK(run_script("F", top)[0].scale == std::numeric_limits<float>::max() / 2 * 1.5f);
  CHECK(run_script("FF", top)[1].scale == std::numeric_limits<float>::max() / 2 * 1.5f);  // ×1.5 = inf: not applied
}

TEST_CASE("bad bounds are refused: NaN, <= 0, a minimum whose reciprocal overflows, min > max") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto refused = [](const ScaleRule& r, const char* field) {
    CHECK_THROWS_WITH_AS(hg::amp::validate(r), doctest::Contains(field), std::invalid_argument);
  };
  for (float bad : {nan, 0.0f, -1.0f, 1e-39f}) {  // 1e-39 is subnormal: 1/1e-39 overflows F32
    CAPTURE(bad);
    ScaleRule r;
    r.min_scale = bad;
    refused(r, "min_scale");
  }
  for (float bad : {nan, 0.0f, -1.0f}) {
    CAPTURE(bad);
    ScaleRule r;
    r.max_scale = bad;
    refused(r, "max_scale");
  }
  ScaleRule crossed;
  crossed.min_scale = 8.0f;
  crossed.max_scale = 4.0f;
  crossed.init_scale = 4.0f;
  refused(crossed, "min_scale");
  ScaleRule below;
  below.min_scale = 1.0f;
  below.init_scale = 0.5f;
  refused(below, "init_scale");
  ScaleRule nan_growth;
  nan_growth.growth_factor = nan;
  refused(nan_growth, "growth_factor");
  ScaleRule unbounded;  // +inf as the maximum means "no maximum" (PyTorch has none)
  unbounded.max_scale = std::numeric_limits<float>::infinity();
  CHECK_NOTHROW(hg::amp::validate(unbounded));
}

TEST_CASE("a bad rule is refused with the field named") {
  ScaleRule r;
  r.backoff_factor = 1.5f;
  CHECK_THROWS_WITH_AS(hg::amp::validate(r), doctest::Contains("backoff_factor"),
                       std::invalid_argument);
  r = ScaleRule{};
  r.growth_interval = 0;
  CHECK_THROWS_WITH_AS(hg::amp::validate(r), doctest::Contains("growth_interval"),
                       std::invalid_argument);
  r = ScaleRule{};
  r.min_scale = 10.0f;
  r.max_scale = 1.0f;
  CHECK_THROWS_WITH_AS(hg::amp::validate(r), doctest::Contains("min_scale"), std::invalid_argument);
  CHECK_NOTHROW(hg::amp::validate(ScaleRule{}));
}
