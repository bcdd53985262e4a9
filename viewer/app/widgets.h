#pragma once
// Small drawing helpers every panel uses: the help marker (as in imgui_demo.cpp), the
// synthetic-data banner, and a plot frame with axes drawn straight onto an ImDrawList
// (ImPlot is not available on these machines, and the plots here are simple).
#include <algorithm>
#include <string>
#include <vector>

#include <imgui.h>

#include "viewer/plot_math.h"
#include "viewer/run_log.h"

namespace hg::viewer {

// "(?)" that shows `text` when hovered.
void help_marker(const char* text);

// A red banner when a run is synthetic demo data, so no picture passes it off as a real run.
void synthetic_banner(const RunData& run);

// A rectangle on screen with data ranges on both axes; map() turns data into pixels, always
// finite ones (a value far outside the range lands far outside the rectangle, clipped).
struct PlotFrame {
  ImVec2 p0, p1;      // inner plotting rectangle, screen pixels
  double x0, x1;      // data range along x (begin_plot makes x1 > x0, both finite)
  double y0, y1;      // data range along y (y0 at the bottom)
  ImDrawList* dl;
  float px(double x) const { return to_pixel(p0.x + (x - x0) / (x1 - x0) * (p1.x - p0.x), p0.x); }
  float py(double y) const { return to_pixel(p1.y - (y - y0) / (y1 - y0) * (p1.y - p0.y), p1.y); }
  ImVec2 map(double x, double y) const { return {px(x), py(y)}; }
  // Data at a screen position (the mouse), clamped to the ranges: always a usable number.
  double x_at(float sx) const {
    return p1.x > p0.x ? std::clamp(x0 + (sx - p0.x) / (p1.x - p0.x) * (x1 - x0), x0, x1) : x0;
  }
  double y_at(float sy) const {
    return p1.y > p0.y ? std::clamp(y0 + (p1.y - sy) / (p1.y - p0.y) * (y1 - y0), y0, y1) : y0;
  }
};

// Reserves `size` (the whole widget, labels included), draws the background, the ticks and
// their labels, and clips to the inner rectangle until end_plot(). Tick labels go through
// x_label / y_label (nullptr: "%g"). Any range is accepted (sane_range makes it drawable, and
// the ticks are bounded: plot_math.h). Returns the frame; ImGui::IsItemHovered() works after it.
using TickLabel = std::string (*)(double);
constexpr double kLog10Ticks = -10;  // as y_step: y is log10(v), ticks at 1, 2, 5 x 10^k
PlotFrame begin_plot(const char* id, ImVec2 size, double x0, double x1, double y0, double y1,
                     const char* x_title, const char* y_title, TickLabel x_label = nullptr,
                     TickLabel y_label = nullptr, double x_step = 0, double y_step = 0);
void end_plot(const PlotFrame& f);

// A line through `pts`, each segment drawn on its own. ImGui's polyline joins segments with a
// miter that it clamps at sharp corners, and a one-step spike of a loss (down and straight back
// up) lost its tip: drawn dashed, or not at all. Thick opaque lines get a round dot at each
// joint. (A translucent line overlaps itself a little at each joint.)
void draw_polyline(ImDrawList* dl, const std::vector<ImVec2>& pts, ImU32 color, float thickness);

// "2^-24" style label, for log2 axes.
std::string pow2_label(double e);
// 12345 -> "12.3k", for step axes.
std::string step_label(double s);

// The colour of a run in every legend, by its index.
ImU32 run_color(int i);
// Colour for a heat-map cell: t in [0,1] along a dark-blue -> yellow ramp (heat_rgb; NaN is 0).
ImU32 heat_color(double t);

// One line per problem of the run (run_problems: corrupt lines with the first reason, an
// unreadable run.json ...), in orange, wrapped: "run NAME: 3 corrupt lines, not drawn (first:
// line 17: grad_hist counts[2]: -5 is negative)". Nothing when the run is fine.
void run_problems_lines(const RunData& run);

}  // namespace hg::viewer
