#pragma once
// The arithmetic behind the plots, without ImGui, so it is tested alone
// (tests/viewer/test_plot_math.cpp): a range made drawable, tick positions, the heat map's
// cells and its colour ramp, and the FP8 panel's log2 axes, pixel columns and summary.
//
// Every loop here is bounded by construction: the number of ticks or cells is computed (and
// capped) before the loop, so no range, however huge, equal or NaN, makes one run away. (A
// loop `for (x = x0; x <= x1; x += step)` never ends once x + step == x, which happens for
// x >= 2^53 and step 1.)
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/dtype/float_format.h"  // Decomposed (decompose.h)
#include "viewer/app/bit_colors.h"  // Rgb
#include "viewer/run_log.h"

namespace hg::viewer {

// Makes [lo, hi] a range a plot can divide by: finite (within ±1e300), increasing, and wider
// than the rounding of its ends. NaN or infinite ends become 0 .. 1.
void sane_range(double& lo, double& hi);

// A "nice" tick spacing for a range: 1, 2 or 5 times a power of ten. Positive and finite for
// any input.
double nice_step(double range, int target_ticks);

// A fixed tick spacing (4 binades on an exponent axis) widened by a power of two when the
// range would hold more than max_ticks of it: 4 over 2^-40..2^16, 64 over 2^-149..2^127.
double fit_step(double step, double range, int max_ticks);

inline constexpr int kMaxTicks = 64;
// The multiples of `step` inside [lo, hi], at most kMaxTicks of them.
std::vector<double> linear_ticks(double lo, double hi, double step);
// For an axis that holds log10(v): ticks at 1, 2, 5 x 10^k (fewer or more mantissas to keep
// 3..8 ticks); over more than 8 decades, powers of ten only. At most kMaxTicks.
std::vector<double> log10_ticks(double lo, double hi);

// A screen coordinate for ImGui: finite and within ±1e6 pixels (far outside any window, so
// clipping hides it) whatever the data; NaN becomes `fallback`.
float to_pixel(double v, float fallback);

// log2 of a histogram's loss scale, rounded: how many bins the true gradient sits left of the
// logged one. 0 when the scale is not a finite positive number (the validation refuses those).
int scale_shift(const GradHist& h);

// The heat map's cells: one column per logged step (or per group of neighbouring steps when
// there are more than max_cols: a cell then holds the group's largest count), one row per
// binary exponent from e_hi (row 0, the top) down to e_lo. Rows span the exponents that hold
// values and FP16's limits (2^-24 .. 2^16, ÷ each step's scale when `unscaled`), at most
// kMaxHeatRows. t (rows x cols, row-major) is log(1 + count) / log(1 + largest count), in [0, 1].
inline constexpr int kMaxHeatRows = 1024;
struct HeatGrid {
  int cols = 0, rows = 0;
  int e_lo = 0, e_hi = 0;
  std::vector<float> t;
};
HeatGrid heat_grid(const std::vector<GradHist>& hs, bool unscaled, int max_cols);

// The heat map's colour ramp, dark blue -> violet -> orange -> yellow (like "inferno"):
// t in [0, 1]; anything outside is clamped, NaN counts as 0.
Rgb heat_rgb(double t);

// ---- the Gradients panel: what a histogram of each format can say ---------------------
// fp16_underflow counts values with 0 < |g| < 2^-24, which FP16 rounds to 0 (or up to 2^-24).
// Values held in F16 never lie there: backward already rounded them, so an F16 histogram's
// fp16_underflow is 0 however much underflowed, and what did is among its zeros (with the
// values that were 0 anyway, a ReLU that was off). BF16 and F32 keep values below 2^-24 (down
// to 2^-133 and 2^-149): there fp16_underflow counts what FP16 would lose. A log without the
// dtype field may hold either.

// The per-layer plot's series (GradientsState::per_layer holds one as an int).
enum class PerLayer { Underflow = 0, Subnormal = 1, LostUpdates = 2, Zeros = 3 };
inline constexpr int kPerLayerSeries = 4;
const char* per_layer_label(PerLayer s);

// One point: the percent of the histogram's values the series counts. NaN (not drawn) where
// the histogram cannot tell: Underflow of F16 values, LostUpdates when none was logged.
double per_layer_value(const GradHist& h, PerLayer s);

// What one pass over a run's histograms finds: the formats among them, whether any has a lost
// update fraction, the largest value of each series (over the points that have one), the last step.
struct PerLayerRange {
  bool f16 = false, wide = false, unknown = false;  // wide: BF16, F32 or F64
  bool has_lost = false;
  double ymax[kPerLayerSeries] = {0, 0, 0, 0};
  double xmax = 1;
};
PerLayerRange per_layer_range(const RunData& run);

// The series drawn when `asked` is picked: Underflow has no point in a run of F16 histograms
// only, so their zeros, which hold the underflow, are drawn instead; LostUpdates in a run that
// logged none falls back to Subnormal.
PerLayer per_layer_shown(PerLayer asked, const PerLayerRange& r);

// The line the plot carries for `shown` ("" for none): where an F16 underflow went, what BF16
// and F32 values keep, and what a flat 0% means. It never says nothing was lost to underflow:
// an F32 gradient copied from an F16 one (master weights) lost its underflow before the copy.
std::string per_layer_note(PerLayer shown, const PerLayerRange& r);

// The histogram's zone left of 2^-24, labelled for the format its values were held in.
std::string below_fp16_label(GradDtype d);

// The line above the histogram: step, scale, how many values in which format, and the shares
// of zeros, FP16 underflow, subnormal and overflow (an F16 histogram's underflow is among its
// zeros, and the line says so instead of a 0% it did not measure), inf and NaN.
std::string grad_summary(const GradHist& h);

// ---- the FP8 panel ----------------------------------------------------------------------
// Its axes are log2 axes: amax, scale and amax·scale span many binades (a gradient's amax of
// 2^-10 gets a scale of 2^25 in E5M2), and the question is always "how many binades from the
// format's max". Only finite positive values have a log: 0, inf and NaN are left out (the
// panel marks an amax that was inf or NaN on its own).

// The binary exponents a log2 axis spans: add() every value drawn, then range() gives whole
// exponents around them, a quarter binade of margin (so a point on a power of two is not on
// the frame) and at least one binade each side of a single value. -1 .. 1 (2^-1 .. 2^1) when
// nothing was added. Exponents of doubles lie in -1074 .. 1024: always finite.
struct Log2Extent {
  double lo = INFINITY, hi = -INFINITY;  // log2 of the smallest and largest value added
  void add(double v);
  // A series in step order, leaving out its isolated points: those more than `binades` from
  // each neighbour (the points before and after with a log). One such point would squeeze the
  // rest into a flat line: delayed scaling's first step, cast with scale 1 before any amax was
  // seen, sits 25 binades below the scales after it. The panel draws a left-out point on the
  // axis's edge. A series whose points are all isolated is added whole.
  void add_series(const std::vector<double>& values, double binades = 6);
  bool empty() const { return !(hi >= lo); }
  void range(double& y0, double& y1) const;
};

// One pixel column of an FP8 tensor's series (a long run has more steps than pixels): the
// column keeps what a student must not miss — the largest amax, history and amax·scale, the
// smallest scale and largest scale_max, the largest underflow, every saturated value (summed,
// capped at INT64_MAX), and whether an amax was inf or NaN. A value with no finite positive
// point in the column is NaN (not drawn).
struct Fp8Column {
  int col = 0;         // 0 .. cols - 1
  int64_t step = 0;    // the first step in the column (where its point is drawn)
  double amax = NAN, history_amax = NAN;
  double scale = NAN, scale_max = NAN;
  double product = NAN;  // amax · scale: where the cast put the tensor's largest value
  double underflow = 0;  // the largest fraction flushed to 0
  int64_t saturated = 0;
  bool nonfinite_amax = false;
};
// Columns of the points with steps in [x0, x1] for a plot `cols` pixels wide; points are
// sorted by step (the reader keeps them so). At most `cols` columns, in order.
std::vector<Fp8Column> fp8_columns(const std::vector<Fp8ScalePoint>& pts, double x0, double x1, int cols);

// The numbers under the plots. Headroom is log2(fp8_max / (amax·scale)): the binades between
// the tensor's largest value after scaling and the format's max. 0 means amax landed on the
// max (current scaling, margin 0); below 0 the cast saturated; NaN when no step has both.
struct Fp8Summary {
  int64_t steps = 0;            // points
  int64_t saturated = 0;        // values clamped over the run (capped at INT64_MAX)
  int64_t saturated_steps = 0;  // steps with at least one
  int64_t first_saturated = -1, last_saturated = -1;  // steps; -1 when none saturated
  double max_underflow = 0;
  int64_t max_underflow_step = -1;
  double mean_underflow = 0;
  double min_headroom = NAN, median_headroom = NAN;  // binades, over the steps with a headroom
  int64_t nonfinite_amax = 0;   // steps whose amax was inf or NaN
};
Fp8Summary fp8_summary(const std::vector<Fp8ScalePoint>& pts, double fp8_max);

// Tensors grouped by layer for the panel's list: "fc1.x" is role "x" of layer "fc1" (the text
// after the last '.'), "blocks.0.attn.w" role "w" of "blocks.0.attn". A name without a '.' is a
// layer of its own with an empty role. Layers in order of first appearance, roles in order.
struct TensorGroup {
  std::string layer;
  std::vector<std::string> tensors, roles;  // full names, and the part after the layer
};
std::vector<TensorGroup> group_by_layer(const std::vector<std::string>& tensors);

// The Bits panel's "unbiased exponent" line. A normal number's exponent is its field minus
// the bias; a subnormal's field is 0 but its exponent is 1 - bias (the smallest normal's),
// so the line says that instead of a subtraction that does not add up (0 - 15 is not -14).
// Zero, infinity and NaN have no exponent to speak of: the line says what the field means.
std::string exponent_text(const Decomposed& d, int bias);

}  // namespace hg::viewer
