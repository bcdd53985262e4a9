#pragma once
// The arithmetic behind the plots, without ImGui, so it is tested alone
// (tests/viewer/test_plot_math.cpp): a range made drawable, tick positions, the heat map's
// cells and its colour ramp.
//
// Every loop here is bounded by construction: the number of ticks or cells is computed (and
// capped) before the loop, so no range, however huge, equal or NaN, makes one run away. (A
// loop `for (x = x0; x <= x1; x += step)` never ends once x + step == x, which happens for
// x >= 2^53 and step 1.)
#include <cstdint>
#include <vector>

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

}  // namespace hg::viewer
