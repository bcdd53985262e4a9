// The plots' arithmetic (viewer/plot_math.h) for any input: ranges that do not advance in
// doubles, NaN, infinities, and the extremes the run-log validation lets through. Every loop
// there must end with a bounded result, and every index into the heat map's cells must stay
// inside them. (The viewer looped forever on a step axis at 1e17, where x + 1 == x; the
// corpus test viewer_bad_runs renders that case.)
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "framework/dtype/float_format.h"
#include "viewer/plot_math.h"

using namespace hg::viewer;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// A histogram over the formats' whole exponent range with `count` values at exponent `e`.
GradHist hist_at(int64_t step, int e, int64_t count, double scale) {
  GradHist h;
  h.step = step;
  h.scale = scale;
  h.exp_min = min_hist_exponent();
  h.exp_max = max_hist_exponent();
  h.counts.assign(size_t(h.exp_max - h.exp_min + 1), 0);
  h.counts[size_t(e - h.exp_min)] = count;
  h.total = count;
  return h;
}

}  // namespace

TEST_CASE("sane_range makes every range finite, increasing and wide enough to divide by") {
  const double cases[][2] = {{1e17, 1e17},   {1e17, 1e17 + 1}, {0, 0},        {5, 3},
                             {kNaN, 5},      {-kInf, kInf},    {kInf, kInf},  {-1e308, 1e308},
                             {1e-320, 1e-320}, {-0.0, 0.0},    {4e18, 4e18 + 512}};
  for (const auto& c : cases) {
    double lo = c[0], hi = c[1];
    sane_range(lo, hi);
    CAPTURE(c[0]);
    CAPTURE(c[1]);
    REQUIRE(std::isfinite(lo));
    REQUIRE(std::isfinite(hi));
    REQUIRE(hi > lo);
    // The ends differ by far more than their rounding: (x - lo) / (hi - lo) is meaningful.
    CHECK(hi - lo >= std::max(std::fabs(lo), std::fabs(hi)) * 1e-9);
    CHECK(std::isfinite(hi - lo));
  }
  double lo = 0, hi = 10;
  sane_range(lo, hi);
  CHECK(lo == 0);  // a usable range is kept as it is
  CHECK(hi == 10);
}

TEST_CASE("nice_step is a positive finite 1, 2 or 5 x 10^k for any range") {
  CHECK(nice_step(10, 5) == 2);
  CHECK(nice_step(100, 4) == 50);
  CHECK(nice_step(7, 7) == 1);
  for (double r : {0.0, -1.0, kNaN, kInf, 1e-320, 1e300, 1e308}) {
    CAPTURE(r);
    const double s = nice_step(r, 8);
    CHECK(s > 0);
    CHECK(std::isfinite(s));
  }
}

TEST_CASE("linear_ticks are the multiples of the step inside the range, at most kMaxTicks") {
  CHECK(linear_ticks(0, 10, 2) == std::vector<double>{0, 2, 4, 6, 8, 10});
  CHECK(linear_ticks(-3, 3, 2) == std::vector<double>{-2, 0, 2});
  CHECK(linear_ticks(0.5, 0.6, 1).empty());
  // A step that does not advance a double (1 at 1e17, 512 at 4e18): the count is computed
  // first, so the loop ends.
  for (auto [lo, hi, step] : {std::array<double, 3>{1e17, 1e17 + 64, 1},
                              std::array<double, 3>{4e18, 4e18 + 4096, 1},
                              std::array<double, 3>{0, 1e300, 1e-300},
                              std::array<double, 3>{-1e300, 1e300, 1}}) {
    CAPTURE(lo);
    CAPTURE(step);
    const std::vector<double> t = linear_ticks(lo, hi, step);
    CHECK(t.size() <= size_t(kMaxTicks));
    for (double x : t) CHECK(std::isfinite(x));
  }
  CHECK(linear_ticks(0, 1e6, 1).size() == size_t(kMaxTicks));
  // Steps and ends that mean nothing give no ticks.
  CHECK(linear_ticks(0, 10, 0).empty());
  CHECK(linear_ticks(0, 10, -1).empty());
  CHECK(linear_ticks(0, 10, kNaN).empty());
  CHECK(linear_ticks(0, 10, kInf).empty());
  CHECK(linear_ticks(kNaN, 10, 1).empty());
  CHECK(linear_ticks(0, kInf, 1).empty());
  CHECK(linear_ticks(10, 0, 1).empty());
}

TEST_CASE("log10_ticks: 1-2-5 per decade, bounded for any range") {
  const std::vector<double> t = log10_ticks(0, 2);  // 1 .. 100
  REQUIRE(t.size() == 7);                           // 1 2 5 10 20 50 100
  CHECK(t.front() == 0);
  CHECK(t[1] == doctest::Approx(std::log10(2.0)));
  CHECK(t.back() == 2);
  for (auto [lo, hi] : {std::array<double, 2>{-1e300, 1e300}, {-324, 309}, {5, 5}}) {
    CAPTURE(lo);
    const std::vector<double> u = log10_ticks(lo, hi);
    CHECK(u.size() <= size_t(kMaxTicks));
    for (double x : u) CHECK((x >= lo && x <= hi));
  }
  // 5e-324 .. 1e308: one tick every 100 decades, spread over the whole axis.
  CHECK(log10_ticks(-323.3, 308) == std::vector<double>{-300, -200, -100, 0, 100, 200, 300});
  CHECK(log10_ticks(kNaN, 1).empty());
  CHECK(log10_ticks(0, kInf).empty());
}

TEST_CASE("to_pixel is finite for any value") {
  CHECK(to_pixel(12.5, 0) == 12.5f);
  CHECK(to_pixel(kNaN, 7) == 7.0f);
  CHECK(to_pixel(kInf, 0) == 1e6f);
  CHECK(to_pixel(-kInf, 0) == -1e6f);
  CHECK(to_pixel(1e300, 0) == 1e6f);
}

TEST_CASE("scale_shift: log2 of the scale, 0 for a scale that is not a positive number") {
  GradHist h;
  h.scale = 1024;
  CHECK(scale_shift(h) == 10);
  h.scale = min_loss_scale();  // 2^-149
  CHECK(scale_shift(h) == -149);
  h.scale = max_loss_scale();  // 3.4e38, just below 2^128
  CHECK(scale_shift(h) == 128);
  for (double bad : {0.0, -1.0, kNaN, kInf, -kInf}) {
    h.scale = bad;
    CHECK(scale_shift(h) == 0);
  }
}

TEST_CASE("heat_rgb: every input gives a colour of the ramp, NaN is the bottom of it") {
  const Rgb bottom = heat_rgb(0), top = heat_rgb(1);
  CHECK((bottom.r == 12 && bottom.g == 10 && bottom.b == 40));
  CHECK((top.r == 250 && top.g == 240 && top.b == 140));
  for (double t : {kNaN, -kNaN, -kInf, -1.0, -0.0}) {
    const Rgb c = heat_rgb(t);
    CHECK((c.r == bottom.r && c.g == bottom.g && c.b == bottom.b));
  }
  for (double t : {kInf, 2.0, 1e300}) {
    const Rgb c = heat_rgb(t);
    CHECK((c.r == top.r && c.g == top.g && c.b == top.b));
  }
  const Rgb mid = heat_rgb(0.5);  // the third stop: (190, 55, 80)
  CHECK((mid.r == 190 && mid.g == 55 && mid.b == 80));
}

TEST_CASE("heat_grid: the formats' whole exponent range and extreme scales stay inside the cells") {
  const int e_lo = min_hist_exponent(), e_hi = max_hist_exponent();  // -149, 127
  const int64_t most = int64_t(1) << 48;
  // Values at both ends of the range, scales at both ends of theirs: the rows of the true
  // gradient then span 2^-149 / 3.4e38 .. 2^127 / 2^-149.
  const std::vector<GradHist> hs = {hist_at(0, e_lo, most, min_loss_scale()),
                                    hist_at(1, e_hi, most, max_loss_scale()),
                                    hist_at(2, 0, 1, 1.0)};
  for (bool unscaled : {false, true}) {
    CAPTURE(unscaled);
    const HeatGrid g = heat_grid(hs, unscaled, 2048);
    REQUIRE(g.cols == 3);
    REQUIRE(g.rows == g.e_hi - g.e_lo + 1);
    REQUIRE(g.rows <= kMaxHeatRows);
    REQUIRE(g.t.size() == size_t(g.rows) * size_t(g.cols));
    for (float t : g.t) REQUIRE((t >= 0.0f && t <= 1.0f));
    // Each value is in the row of its exponent (shifted by the scale for the true gradient).
    auto cell = [&](int e, int x) { return g.t[size_t(g.e_hi - e) * size_t(g.cols) + size_t(x)]; };
    const int s0 = unscaled ? -149 : 0, s1 = unscaled ? 128 : 0;
    CHECK(cell(e_lo - s0, 0) == 1.0f);  // the largest count
    CHECK(cell(e_hi - s1, 1) == 1.0f);
    CHECK(cell(0, 2) > 0.0f);
    CHECK(cell(0, 2) < 0.1f);  // log(2) / log(1 + 2^48)
  }
}

TEST_CASE("heat_grid: more steps than columns share columns, the largest count kept") {
  std::vector<GradHist> hs;
  for (int k = 0; k < 5000; ++k) hs.push_back(hist_at(k, -10, k == 4321 ? 1000 : 1, 1.0));
  const HeatGrid g = heat_grid(hs, false, 2048);
  CHECK(g.cols == 2048);
  REQUIRE(g.t.size() == size_t(g.rows) * 2048);
  const size_t row = size_t(g.e_hi - (-10));
  int bright = 0;
  for (int x = 0; x < 2048; ++x) bright += g.t[row * 2048 + size_t(x)] == 1.0f;
  CHECK(bright == 1);  // step 4321's spike survives in the one column that holds it
  CHECK(heat_grid({}, false, 2048).t.empty());
  CHECK(heat_grid(hs, false, 0).t.empty());
}

TEST_CASE("fit_step widens a fixed tick step by powers of two until the ticks fit") {
  CHECK(fit_step(4, 60, 20) == 4);    // 2^-44 .. 2^16 in steps of 4 binades: 15 ticks fit
  CHECK(fit_step(4, 277, 20) == 16);  // 2^-149 .. 2^127: 69 ticks -> 17 with 16 binades
  CHECK(fit_step(1, 1e12, 10) == std::exp2(std::ceil(std::log2(1e11))));
  CHECK(fit_step(4, 277, 0) == 512);  // at most one tick
  for (double r : {kNaN, kInf, 0.0, -5.0}) CHECK(fit_step(4, r, 10) == 4);
  CHECK(std::isnan(fit_step(kNaN, 10, 10)));  // a step that is no step is left to linear_ticks
}

TEST_CASE("the Bits panel's exponent line: a subnormal is 1 - bias, not field - bias") {
  // 1e-6 in FP16 is a subnormal: field 0, scaled by 2^-14 = 2^(1 - 15).
  const hg::Decomposed sub = hg::decompose(1e-6, hg::kFP16);
  REQUIRE(sub.cls == hg::FloatClass::Subnormal);
  const std::string s = hg::viewer::exponent_text(sub, hg::kFP16.bias);
  CHECK(s == "-14   (field 0: subnormal, scaled as the smallest normal, 1 - bias 15)");
  CHECK(s.find("field 0 - bias") == std::string::npos);  // 0 - 15 is -15, not -14
  // A normal number: the subtraction is the exponent.
  CHECK(hg::viewer::exponent_text(hg::decompose(0.1, hg::kFP16), hg::kFP16.bias) == "-4   (field 11 - bias 15)");
  CHECK(hg::viewer::exponent_text(hg::decompose(0.0, hg::kFP16), hg::kFP16.bias) == "none   (field 0 and mantissa 0: zero)");
  CHECK(hg::viewer::exponent_text(hg::decompose(1e6, hg::kFP16), hg::kFP16.bias) == "none   (field 31: inf)");
}

// ---- the FP8 panel ------------------------------------------------------------------------

namespace {
Fp8ScalePoint fp8_at(int64_t step, double amax, double scale, int64_t saturated = 0, double underflow = 0) {
  Fp8ScalePoint p;
  p.step = step, p.amax = p.history_amax = amax, p.scale = p.scale_max = scale;
  p.saturated = saturated, p.underflow = underflow;
  return p;
}
}  // namespace

TEST_CASE("Log2Extent: whole binades around the finite positive values, nothing else counts") {
  Log2Extent e;
  double y0 = 0, y1 = 0;
  e.range(y0, y1);
  CHECK((e.empty() && y0 == -1 && y1 == 1));  // nothing drawn: 2^-1 .. 2^1
  for (double v : {0.0, -3.0, kNaN, kInf, -kInf}) e.add(v);
  CHECK(e.empty());
  e.add(448);  // 2^8.81
  e.range(y0, y1);
  CHECK((y0 == 8 && y1 == 10));
  e.add(256);  // exactly 2^8: a quarter binade of margin below it, so not on the frame
  e.range(y0, y1);
  CHECK((y0 == 7 && y1 == 10));
  e.add(0.0123);  // a gradient's amax, 2^-6.35
  e.add(4377404.5);  // its E5M2 scale, 2^22.06
  e.range(y0, y1);
  CHECK((y0 == -7 && y1 == 23));
  Log2Extent ends;  // the doubles' extremes stay finite
  ends.add(5e-324);
  ends.add(1.7976931348623157e308);
  ends.range(y0, y1);
  CHECK((y0 == -1075 && y1 == 1025));
}

TEST_CASE("fp8_columns: one per step while they fit, the extremes of each column when they do not") {
  // Sparse: 4 steps over 100 pixels, one column each, values as logged.
  std::vector<Fp8ScalePoint> pts = {fp8_at(0, 2, 1), fp8_at(1, 2, 224), fp8_at(2, 4, 224, 7), fp8_at(3, 4, 112)};
  auto cols = fp8_columns(pts, 0, 4, 100);
  REQUIRE(cols.size() == 4);
  CHECK((cols[0].col == 0 && cols[1].col == 25 && cols[2].col == 50 && cols[3].col == 75));
  CHECK(cols[2].step == 2);
  CHECK(cols[2].product == 896);  // 4 · 224: twice E4M3's max, so it saturated
  CHECK(cols[2].saturated == 7);
  CHECK(cols[1].product == 448);

  // Dense: 5000 steps in 50 columns. A one-step spike of amax and of saturation is kept, and the
  // scale's dip too (the smallest scale of its column).
  pts.clear();
  for (int64_t k = 0; k < 5000; ++k) pts.push_back(fp8_at(k, k == 3210 ? 64 : 1, k == 3211 ? 7 : 448, k == 3210 ? 99 : 0));
  cols = fp8_columns(pts, 0, 5000, 50);
  REQUIRE(cols.size() == 50);
  int spikes = 0, dips = 0;
  int64_t saturated = 0;
  for (const Fp8Column& c : cols) {
    spikes += c.amax == 64;
    dips += c.scale == 7;
    saturated += c.saturated;
    CHECK((c.col >= 0 && c.col < 50));
  }
  CHECK((spikes == 1 && dips == 1 && saturated == 99));
  CHECK(cols[32].amax == 64);  // step 3210 is in column 3210 / 100
  CHECK(cols[32].product == 64 * 448);
}

TEST_CASE("fp8_columns: inf, NaN and 0 are never drawn, an inf or NaN amax is flagged, sums do not overflow") {
  std::vector<Fp8ScalePoint> pts = {fp8_at(0, kNaN, 448), fp8_at(1, kInf, 448), fp8_at(2, 0, 448),
                                    fp8_at(3, 1, kInf), fp8_at(4, 1e300, 1e300)};
  pts[0].saturated = pts[1].saturated = int64_t(1) << 62;
  pts[2].saturated = int64_t(1) << 62;
  const auto cols = fp8_columns(pts, 0, 5, 5);
  REQUIRE(cols.size() == 5);
  CHECK((cols[0].nonfinite_amax && cols[1].nonfinite_amax && !cols[2].nonfinite_amax));
  for (const Fp8Column& c : cols) {
    for (double v : {c.amax, c.history_amax, c.scale, c.scale_max, c.product})
      CHECK((std::isnan(v) || (v > 0 && std::isfinite(v))));
  }
  CHECK(std::isnan(cols[0].amax));
  CHECK(std::isnan(cols[2].amax));   // 0 has no log
  CHECK(std::isnan(cols[3].scale));  // neither has inf
  CHECK(std::isnan(cols[4].product));  // 1e300 · 1e300 overflows to inf
  CHECK(cols[4].amax == 1e300);
  // All in one column: 3 · 2^62 saturated values stop at INT64_MAX instead of wrapping.
  const auto one = fp8_columns(pts, 0, 5, 1);
  REQUIRE(one.size() == 1);
  CHECK(one[0].saturated == INT64_MAX);
  // Points outside the range, and ranges that are no range, give no columns.
  CHECK(fp8_columns(pts, 10, 20, 100).empty());
  CHECK(fp8_columns(pts, 0, 5, 0).empty());
  CHECK(fp8_columns(pts, kNaN, 5, 10).empty());
  CHECK(fp8_columns(pts, 5, 5, 10).empty());
}

TEST_CASE("fp8_summary: saturation, underflow and headroom in binades") {
  // Delayed scaling, E4M3, by hand: the scale comes from the history, so the step whose amax
  // jumps (step 2: 4 where the history held 2) lands at 4 · 224 = 896, 1 binade above 448.
  const std::vector<Fp8ScalePoint> pts = {fp8_at(0, 2, 1, 0, 0.25), fp8_at(1, 2, 224, 0, 0.0),
                                          fp8_at(2, 4, 224, 30, 0.0), fp8_at(3, 4, 112, 0, 0.01),
                                          fp8_at(4, 1, 112, 0, 0.04)};
  const Fp8Summary s = fp8_summary(pts, hg::kE4M3.max_finite());
  CHECK(s.steps == 5);
  CHECK(s.saturated == 30);
  CHECK(s.saturated_steps == 1);
  CHECK((s.first_saturated == 2 && s.last_saturated == 2));
  CHECK(s.max_underflow == 0.25);
  CHECK(s.max_underflow_step == 0);
  CHECK(s.mean_underflow == doctest::Approx(0.06));
  // Headrooms: log2(448 / 2) = 7.81, 0, -1, 0, 2: the smallest -1 (saturated), the median 0.
  CHECK(s.min_headroom == doctest::Approx(-1.0));
  CHECK(s.median_headroom == doctest::Approx(0.0).epsilon(1e-12));
  const Fp8Summary none = fp8_summary({}, 448);
  CHECK((none.steps == 0 && none.first_saturated == -1 && none.max_underflow_step == -1));
  CHECK(std::isnan(none.min_headroom));
  const Fp8Summary bad = fp8_summary({fp8_at(0, kNaN, 448), fp8_at(1, 0, 448)}, 448);
  CHECK(bad.nonfinite_amax == 1);
  CHECK(std::isnan(bad.median_headroom));  // neither NaN nor 0 has a headroom
}

TEST_CASE("group_by_layer: roles under their layer, in order of appearance") {
  const auto g = group_by_layer({"fc1.x", "fc1.w", "fc1.dy", "fc2.x", "blocks.0.attn.w", "fc2.dy", "loose"});
  REQUIRE(g.size() == 4);
  CHECK(g[0].layer == "fc1");
  CHECK(g[0].roles == std::vector<std::string>{"x", "w", "dy"});
  CHECK(g[0].tensors == std::vector<std::string>{"fc1.x", "fc1.w", "fc1.dy"});
  CHECK(g[1].layer == "fc2");
  CHECK(g[1].roles == std::vector<std::string>{"x", "dy"});  // fc2.dy came later, still under fc2
  CHECK(g[2].layer == "blocks.0.attn");
  CHECK(g[2].roles == std::vector<std::string>{"w"});
  CHECK(g[3].layer == "loose");
  CHECK(g[3].roles == std::vector<std::string>{""});
  CHECK(group_by_layer({}).empty());
}

TEST_CASE("Log2Extent::add_series: an isolated point does not stretch the axis, a trend or a step does") {
  auto range_of = [](const std::vector<double>& v) {
    Log2Extent e;
    e.add_series(v);
    double y0, y1;
    e.range(y0, y1);
    return std::array<double, 2>{y0, y1};
  };
  // Delayed scaling's first step casts with 1, the others near 2^25: the axis fits the others.
  std::vector<double> scales = {1.0};
  for (int k = 1; k < 60; ++k) scales.push_back(std::exp2(25.0 - 0.05 * k));
  CHECK(range_of(scales) == std::array<double, 2>{21, 26});  // 2^22.05 .. 2^24.95, not down to 2^0
  // A drift of 40 binades over a long run is no outlier: every point has a close neighbour.
  std::vector<double> drift;
  for (int k = 0; k <= 400; ++k) drift.push_back(std::exp2(-30.0 + 0.1 * k));
  CHECK(range_of(drift) == std::array<double, 2>{-31, 11});
  // A level that moves 10 binades and stays: both levels are drawn.
  CHECK(range_of({4, 4, 4, 4096, 4096, 4096}) == std::array<double, 2>{1, 13});
  // A one-step spike of 8 binades goes to the edge; one of 5 stays on the axis.
  CHECK(range_of({1, 1, 256, 1, 1}) == std::array<double, 2>{-1, 1});
  CHECK(range_of({1, 1, 32, 1, 1}) == std::array<double, 2>{-1, 6});
  // Nothing but isolated points (two far apart), or one point: all of them.
  CHECK(range_of({1, 1024}) == std::array<double, 2>{-1, 11});
  CHECK(range_of({8}) == std::array<double, 2>{2, 4});
  // Values without a log are skipped, and do not separate neighbours.
  CHECK(range_of({1, kNaN, 0.0, 2, kInf, -4.0}) == std::array<double, 2>{-1, 2});
  CHECK(range_of({}) == std::array<double, 2>{-1, 1});
}

// ---- the Gradients panel's per-layer plot: what each format lets it claim ----------------
// An F16 gradient as backward made it holds no value in (0, 2^-24): what underflowed is
// already 0. Its fp16_underflow is 0 however much was lost, so the plot must not say "0%
// lost" for it; the loss is among the zeros.

namespace {

// One parameter's histograms at steps 0, 10, 20: `zeros` exact zeros and `under` values below
// 2^-24 out of 100, the rest at 2^-10.
RunData run_of(GradDtype dtype, int64_t zeros, int64_t under) {
  RunData run;
  run.params = {"fc2.weight"};
  for (int64_t step : {0, 10, 20}) {
    GradHist h = hist_at(step, -10, 100 - zeros - under, 1.0 / 4096);
    h.counts[size_t(-30 - h.exp_min)] = under;
    h.fp16_underflow = under;
    h.zeros = zeros;
    h.total = 100;
    h.dtype = dtype;
    run.grads["fc2.weight"].push_back(h);
  }
  return run;
}

bool says_nothing_lost(const std::string& note) {
  return note.find("nothing") != std::string::npos && note.find("lost") != std::string::npos;
}

}  // namespace

TEST_CASE("per-layer plot: F16 gradients show their zeros, never a 0% lost") {
  // The Lab's F16 run at loss scale 2^-12: 40% of fc2's gradient underflowed to 0.
  const RunData run = run_of(GradDtype::F16, 40, 0);
  const PerLayerRange r = per_layer_range(run);
  CHECK(r.f16);
  CHECK_FALSE(r.wide);
  CHECK(r.xmax == 20);
  // "% below 2^-24" has no point for an F16 histogram: it cannot be measured there.
  CHECK(std::isnan(per_layer_value(run.grads.at("fc2.weight")[0], PerLayer::Underflow)));
  // So the plot shows the zeros, which hold the underflow, and says why.
  const PerLayer shown = per_layer_shown(PerLayer::Underflow, r);
  CHECK(shown == PerLayer::Zeros);
  CHECK(per_layer_value(run.grads.at("fc2.weight")[0], shown) == 40.0);
  CHECK(r.ymax[int(PerLayer::Zeros)] == 40.0);
  const std::string note = per_layer_note(shown, r);
  CHECK_FALSE(says_nothing_lost(note));
  CHECK(note.find("already 0") != std::string::npos);
  // Whatever series is picked, none claims that nothing was lost to underflow.
  for (PerLayer s : {PerLayer::Underflow, PerLayer::Zeros, PerLayer::Subnormal})
    CHECK_FALSE(says_nothing_lost(per_layer_note(per_layer_shown(s, r), r)));
  // An F16 run with no zero at all may say so: nothing underflowed.
  const PerLayerRange clean = per_layer_range(run_of(GradDtype::F16, 0, 0));
  CHECK(per_layer_note(PerLayer::Zeros, clean).find("0% for every parameter") != std::string::npos);
}

TEST_CASE("per-layer plot: F32 and BF16 gradients count what FP16 would lose, old logs do not say") {
  for (GradDtype d : {GradDtype::F32, GradDtype::BF16}) {
    CAPTURE(int(d));
    const RunData run = run_of(d, 5, 30);
    const PerLayerRange r = per_layer_range(run);
    CHECK(r.wide);
    CHECK(per_layer_shown(PerLayer::Underflow, r) == PerLayer::Underflow);
    CHECK(per_layer_value(run.grads.at("fc2.weight")[0], PerLayer::Underflow) == 30.0);
    CHECK(per_layer_value(run.grads.at("fc2.weight")[0], PerLayer::Zeros) == 5.0);
    // The values were kept: the note says FP16 would lose them, not that they were lost.
    CHECK(per_layer_note(PerLayer::Underflow, r).find("would") != std::string::npos);
    // None below 2^-24 in a format that keeps them: FP16 would lose none.
    const PerLayerRange none = per_layer_range(run_of(d, 5, 0));
    CHECK(per_layer_note(PerLayer::Underflow, none).find("0% for every parameter") != std::string::npos);
  }
  // A log without the field may hold F16 values: no claim that nothing was lost.
  const PerLayerRange old = per_layer_range(run_of(GradDtype::Unknown, 40, 0));
  CHECK(old.unknown);
  CHECK(per_layer_shown(PerLayer::Underflow, old) == PerLayer::Underflow);
  CHECK_FALSE(says_nothing_lost(per_layer_note(PerLayer::Underflow, old)));
  // A live run that changed recipe: F16 steps are gaps in the underflow series, and the note
  // says where their underflow went.
  RunData mixed = run_of(GradDtype::F32, 0, 0);
  mixed.grads["fc2.weight"][2].dtype = GradDtype::F16;
  mixed.grads["fc2.weight"][2].zeros = 40;
  mixed.grads["fc2.weight"][2].counts[size_t(-10 - min_hist_exponent())] = 60;
  const PerLayerRange r = per_layer_range(mixed);
  CHECK(per_layer_shown(PerLayer::Underflow, r) == PerLayer::Underflow);
  const std::string note = per_layer_note(PerLayer::Underflow, r);
  CHECK_FALSE(says_nothing_lost(note));
  CHECK(note.find("F16") != std::string::npos);
}

TEST_CASE("histogram view: the summary and the zone below 2^-24 word each format honestly") {
  GradHist f16 = run_of(GradDtype::F16, 40, 0).grads.at("fc2.weight")[0];
  const std::string s = grad_summary(f16);
  CHECK(s.find("zeros 40.00%") != std::string::npos);
  CHECK(s.find("underflow 0.00%") == std::string::npos);  // not a measurement for F16 values
  CHECK(below_fp16_label(GradDtype::F16).find("F16") != std::string::npos);
  CHECK(below_fp16_label(GradDtype::F16).find("zeros") != std::string::npos);
  // Values FP16 would lose, held in a format that kept them.
  GradHist f32 = run_of(GradDtype::F32, 5, 30).grads.at("fc2.weight")[0];
  CHECK(grad_summary(f32).find("underflow 30.00%") != std::string::npos);
  CHECK(below_fp16_label(GradDtype::BF16).find("BF16 keeps") != std::string::npos);
  CHECK(below_fp16_label(GradDtype::Unknown) == "FP16: below 2^-24");
}
