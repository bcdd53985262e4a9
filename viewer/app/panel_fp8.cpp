// The FP8 panel: chapter 14's casts, tensor by tensor (the `fp8_scale` events of the run log,
// written by framework/fp8/linear.h for every FP8 tensor at every training step).
//
// Sections (grep for "----"):
//   pickers     the run and its recipe; the tensors, a list grouped by layer, formats tagged
//   plots       amax and the delayed window; the scale; amax·scale against the format's max;
//               the underflow
//   summary     when it saturated, how far below the max it sat, what underflowed, in words
//
// What to see. A cast is code = round(value · scale), and it saturates (clamps) where
// value · scale passes the format's max: 448 in E4M3, 57344 in E5M2. So amax · scale against
// that max is the whole story of a scale. Current scaling sets scale = max / amax: amax · scale
// lies on the max line. Delayed scaling sets it from the largest amax of the last L steps
// (history_amax), so the scale answers a change of amax one step late: a tensor whose amax
// grows past its window lands above the line for a step (it saturates: red marks), and after a
// spike the scale stays low (amax · scale below the line: headroom, precision given away) until
// the spike leaves the window. Every axis but the underflow's is log2: powers of two, as the
// formats count.
//
// Long runs are drawn one pixel column at a time (fp8_columns, plot_math.h: the largest amax,
// the smallest scale and every saturated value of the column), so a frame costs the same for any
// run length.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <imgui.h>

#include "viewer/app/app.h"
#include "viewer/app/fp8_colors.h"
#include "viewer/app/widgets.h"

namespace hg::viewer {

namespace {

constexpr int kColors = sizeof kFp8TensorColors / sizeof kFp8TensorColors[0];

ImU32 u32(Rgb c, int alpha = 255) { return IM_COL32(c.r, c.g, c.b, alpha); }
ImVec4 vec4(Rgb c) { return ImGui::ColorConvertU32ToFloat4(u32(c)); }

// "0.0123 = 2^-6.35": the value and where it sits in binades. Non-positive or non-finite
// values have no log: just the value ("0", "inf", "nan").
std::string with_log2(double v) {
  if (!(v > 0) || !std::isfinite(v)) return fmt::format("{}", v);
  return fmt::format("{:.4g} = 2^{:.2f}", v, std::log2(v));
}

// Binades to two decimals, without "-0.00" for a hair below zero (448 · (1 + 2^-24) in doubles).
std::string binades(double b) { return fmt::format("{:.2f}", std::round(b * 100) / 100 + 0.0); }

// One tensor on screen: its series, its colour, and its pixel columns for the current plots.
struct Shown {
  std::string name;
  const Fp8Series* series;
  ImU32 color;
  std::vector<Fp8Column> cols;
};

// Columns of a series, cached: they change only when the run's reader moves on or the plot
// changes width or range, so most frames reuse the last result.
const std::vector<Fp8Column>& columns_cached(const Fp8Series& s, uint64_t version, double x0, double x1, int cols) {
  using Key = std::tuple<const void*, size_t, uint64_t, double, double, int>;
  static std::map<Key, std::vector<Fp8Column>> cache;
  const Key key{&s, s.points.size(), version, x0, x1, cols};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() > 64) cache.clear();  // old widths and runs: forget them
  return cache[key] = fp8_columns(s.points, x0, x1, cols);
}

// Every tensor's summary of a run, recomputed when its reader moves on (the list shows each
// tensor's saturated count, which needs every point).
const std::map<std::string, Fp8Summary>& summaries(const RunSlot& slot) {
  struct Entry {
    uint64_t version = 0;
    std::map<std::string, Fp8Summary> sums;
  };
  static std::map<std::string, Entry> cache;  // by run folder
  Entry& e = cache[slot.data().dir];
  if (e.version != slot.reader->version() || e.sums.size() != slot.data().fp8.size()) {
    e.sums.clear();
    for (const auto& [name, s] : slot.data().fp8) e.sums[name] = fp8_summary(s.points, s.format->max_finite());
    e.version = slot.reader->version();
  }
  return e.sums;
}

// ---- pickers ----------------------------------------------------------------------------

// The run with fp8_scale events that is selected; -1 (and a paragraph saying how to make one)
// when no run has them.
int pick_run(App& app) {
  draw_budget_line(app);
  Fp8State& s = app.fp8;
  std::vector<int> with_fp8;
  for (size_t i = 0; i < app.runs.size(); ++i)
    if (!app.runs[i].data().fp8.empty()) with_fp8.push_back(static_cast<int>(i));
  if (!app.has_run(s.run)) {  // none picked: the first run read that has fp8_scale events
    if (with_fp8.empty()) {
      ImGui::TextWrapped("No run with fp8_scale events yet. Chapter 14's FP8 training runs write one per "
                         "FP8 tensor and step; for example");
      ImGui::TextUnformatted("    ./lab lesson 14 --sections train --runs delayed --limit-train 2000");
      ImGui::TextWrapped("writes runs/14_fp8_delayed/ (lessons/14_fp8/README.md, section 5), and ./lab view "
                         "shows it here. Synthetic demo data for this panel: halfgrad-viewer "
                         "--make-demo-runs DIR --demo-modes fp8_delayed.");
      for (const RunSlot& r : app.runs) run_problems_lines(r.data());  // perhaps why
      return -1;
    }
    s.run = with_fp8[0];
  }
  const float fs = ImGui::GetFontSize();
  ImGui::SetNextItemWidth(fs * 13);
  if (ImGui::BeginCombo("run", app.runs[s.run].data().name.c_str())) {
    for (int i : with_fp8)
      if (ImGui::Selectable(app.runs[i].data().name.c_str(), i == s.run)) s.run = i;
    ImGui::EndCombo();
  }
  help_marker("A run folder with fp8_scale events (docs/run-log.md): chapter 14's FP8 runs. The BF16 "
              "baseline casts nothing to FP8 and is not listed.");
  const RunData& run = app.runs[s.run].data();
  if (run.fp8.empty()) {  // the run picked stays picked: the panel says what it lacks
    ImGui::TextWrapped("%s: no fp8_scale events%s.", run.name.c_str(), app.reading(s.run));
    run_problems_lines(run);
    return -1;
  }
  return s.run;
}

// The recipe, from run.json: "fp8_delayed · HYBRID formats · amax history 16 · margin 0".
void draw_recipe(const RunData& run) {
  const nlohmann::json& rj = run.run_json;
  if (!rj.is_object()) return;
  std::string text;
  if (rj.contains("precision") && rj["precision"].is_string()) text = rj["precision"].get<std::string>();
  if (rj.contains("args") && rj["args"].is_object()) {
    const nlohmann::json& a = rj["args"];
    if (a.contains("formats") && a["formats"].is_string())
      text += a["formats"] == "hybrid" ? "   HYBRID: E4M3 forward, E5M2 gradients" : "   E4M3 everywhere";
    if (a.contains("history") && a["history"].is_number_integer() && text.find("delayed") != std::string::npos)
      text += fmt::format("   amax history {} steps", a["history"].get<int64_t>());
    if (a.contains("margin") && a["margin"].is_number_integer())
      text += fmt::format("   margin {}", a["margin"].get<int64_t>());
  }
  if (text.empty()) return;
  ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
  ImGui::TextUnformatted(text.c_str());
  help_marker("The recipe the run was trained with (its run.json). current: scale = max / amax of the "
              "tensor itself; delayed: from the largest amax of the last 'history' steps; block / mx: "
              "a scale per tile (the plots show the smallest tile scale, and the largest as a band). "
              "margin: binades of headroom left below the max.");
}

// The run's tensors by layer, each with its format and the values it saturated over the run.
// A click shows that tensor alone, Ctrl+click adds or removes one (app.fp8.tensors).
void draw_tensor_list(App& app, const RunSlot& slot, ImVec2 size) {
  const RunData& run = slot.data();
  std::vector<std::string>& picked = app.fp8.tensors;
  const auto& sums = summaries(slot);
  ImGui::BeginChild("tensors", size, true);
  ImGui::TextDisabled("tensors");
  help_marker("Each Linear casts three tensors: its input x and weight w (forward, E4M3) and the "
              "gradient dy of its output (backward, E5M2 in HYBRID formats). Click to show one, "
              "Ctrl+click to overlay several. The red number: values that saturated over the run. "
              "At first the tensor that saturated at the most steps is shown.");
  const float fs = ImGui::GetFontSize();
  ImGui::TextDisabled("  role");
  ImGui::SameLine(fs * 3.2f);
  ImGui::TextDisabled("format");
  ImGui::SameLine(fs * 6.6f);
  ImGui::TextDisabled("saturated");
  for (const TensorGroup& g : group_by_layer(run.fp8_tensors)) {
    ImGui::TextDisabled("%s", g.layer.c_str());
    for (size_t i = 0; i < g.tensors.size(); ++i) {
      const std::string& t = g.tensors[i];
      const Fp8Series& s = run.fp8.at(t);
      const auto at = std::find(picked.begin(), picked.end(), t);
      const bool on = at != picked.end();
      ImGui::PushID(t.c_str());
      if (on) ImGui::PushStyleColor(ImGuiCol_Text, u32(kFp8TensorColors[(at - picked.begin()) % kColors]));
      const std::string label = "  " + (g.roles[i].empty() ? t : g.roles[i]);
      if (ImGui::Selectable(label.c_str(), on)) {
        if (!ImGui::GetIO().KeyCtrl) picked = {t};
        else if (on) picked.erase(at);
        else picked.push_back(t);
      }
      if (on) ImGui::PopStyleColor();
      // The format, and the saturated values of the whole run, on the same row.
      ImGui::SameLine(fs * 3.2f);
      ImGui::TextColored(s.format == &kE4M3 ? ImVec4(0.55f, 0.75f, 1.0f, 1.0f) : ImVec4(0.75f, 0.9f, 0.55f, 1.0f),
                         "%s", fp8_format_name(s.format));
      if (auto it = sums.find(t); it != sums.end() && it->second.saturated > 0) {
        ImGui::SameLine(fs * 6.6f);
        ImGui::TextColored(vec4(kFp8Saturated), "%s", step_label(double(it->second.saturated)).c_str());
      }
      ImGui::PopID();
    }
  }
  ImGui::EndChild();
}

// ---- plots ------------------------------------------------------------------------------

// The values of one field of the columns, for a Log2Extent.
std::vector<double> values(const std::vector<Fp8Column>& cols, double Fp8Column::*field) {
  std::vector<double> v;
  v.reserve(cols.size());
  for (const Fp8Column& c : cols) v.push_back(c.*field);
  return v;
}

// A series through the columns' values of `field`, broken where a column has none (NaN).
// staircase: the value holds until the next column (a scale is one number for a whole step).
// dots: a dot on every point, when they are few enough to see one by one. A point off the axis
// (an isolated one, Log2Extent::add_series) is drawn on its edge with an arrow pointing out and,
// with `labels`, its power of two beside it (the first few; overlaid tensors would write theirs
// over each other, and the tooltip says it too).
void draw_line(const PlotFrame& f, const std::vector<Fp8Column>& cols, double Fp8Column::*field, bool log2_y,
               ImU32 color, float thickness, bool staircase, bool dots, bool labels = false) {
  std::vector<ImVec2> line;
  int off_axis = 0;
  auto flush = [&]() {
    // A staircase turns at right angles only, which ImGui's own joins draw whole.
    if (staircase && line.size() > 1)
      f.dl->AddPolyline(line.data(), static_cast<int>(line.size()), color, 0, thickness);
    else
      draw_polyline(f.dl, line, color, thickness);
    line.clear();
  };
  for (size_t i = 0; i < cols.size(); ++i) {
    const double v = cols[i].*field;
    if (std::isnan(v)) {
      flush();
      continue;
    }
    const double y = log2_y ? std::log2(v) : v;
    const bool below = y < f.y0, above = y > f.y1;
    ImVec2 p = f.map(double(cols[i].step), std::clamp(y, f.y0, f.y1));
    if (below) p.y -= 9;
    if (above) p.y += 9;
    if (staircase && !line.empty()) line.push_back({p.x, line.back().y});
    line.push_back(p);
    if (below) f.dl->AddTriangleFilled({p.x - 5, p.y}, {p.x + 5, p.y}, {p.x, p.y + 8}, color);
    else if (above) f.dl->AddTriangleFilled({p.x - 5, p.y}, {p.x + 5, p.y}, {p.x, p.y - 8}, color);
    else if (dots) f.dl->AddCircleFilled(p, thickness + 1.0f, color);
    if ((below || above) && log2_y && labels && off_axis++ < 8) {
      const std::string label = pow2_label(y);
      const float h = ImGui::GetFontSize();
      f.dl->AddText({p.x + 7, std::clamp(p.y - h * 0.5f, f.p0.y, f.p1.y - h)}, color, label.c_str());
    }
    // The last point of a staircase holds for its step.
    if (staircase && (i + 1 == cols.size() || std::isnan(cols[i + 1].*field)))
      line.push_back({f.px(double(cols[i].step) + 1), p.y});
  }
  flush();
}

// A translucent band `height` pixels tall at each column's value of `field` (log2 axis),
// across the column to the next one: one rectangle per column. (As a polyline this thick,
// each short rise or drop between two steps came out as a slanted wedge.)
void draw_band(const PlotFrame& f, const std::vector<Fp8Column>& cols, double Fp8Column::*field, ImU32 color,
               float height) {
  for (size_t i = 0; i < cols.size(); ++i) {
    const double v = cols[i].*field;
    if (!(v > 0) || !std::isfinite(v)) continue;  // no value, or none on a log2 axis
    const ImVec2 p = f.map(double(cols[i].step), std::clamp(std::log2(v), f.y0, f.y1));
    const float x1 = i + 1 < cols.size() ? f.px(double(cols[i + 1].step)) : f.px(double(cols[i].step) + 1);
    f.dl->AddRectFilled({p.x, p.y - 0.5f * height}, {std::max(x1, p.x + 1), p.y + 0.5f * height}, color);
  }
}

// The point of each shown tensor nearest the mouse, in a tooltip, and a vertical line there.
void hover(const PlotFrame& f, const std::vector<Shown>& shown) {
  if (!ImGui::IsItemHovered()) return;
  const double step = f.x_at(ImGui::GetIO().MousePos.x);
  ImGui::BeginTooltip();
  for (const Shown& t : shown) {
    const auto& pts = t.series->points;
    if (pts.empty()) continue;
    auto it = std::lower_bound(pts.begin(), pts.end(), step,
                               [](const Fp8ScalePoint& p, double s) { return double(p.step) < s; });
    if (it != pts.begin() && (it == pts.end() || double(it->step) - step > step - double(std::prev(it)->step))) --it;
    const double max = t.series->format->max_finite();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(t.color), "%s (%s) at step %lld", t.name.c_str(),
                       fp8_format_name(t.series->format), static_cast<long long>(it->step));
    ImGui::Text("  amax %s    window max (history_amax) %s", with_log2(it->amax).c_str(),
                with_log2(it->history_amax).c_str());
    ImGui::Text("  scale %s%s", with_log2(it->scale).c_str(),
                it->scale_max > it->scale ? (",  largest tile scale " + with_log2(it->scale_max)).c_str() : "");
    const double product = it->amax * it->scale;
    const std::string where = it->saturated > 0 ? "above it: saturated"
                              : product > 0 && std::isfinite(product)
                                  ? binades(std::max(0.0, std::log2(max / product))) + " binades below it"
                                  : "no amax to place";
    ImGui::Text("  amax·scale %s   (the max is %g: %s)", with_log2(product).c_str(), max, where.c_str());
    ImGui::Text("  underflow %.3f%% of the non-zero values     saturated %lld values", 100 * it->underflow,
                static_cast<long long>(it->saturated));
  }
  ImGui::EndTooltip();
  const float x = f.px(step);
  f.dl->AddLine({x, f.p0.y}, {x, f.p1.y}, IM_COL32(255, 255, 255, 90));
}

void record(App& app, const char* id, const PlotFrame& f) {
  if (app.plot_boxes) app.plot_boxes->push_back({id, f.p0, f.p1});
}

// A red triangle over each column that saturated, above the point at `y` (log2), or at the top
// of the plot when there is no point.
void saturation_marks(const PlotFrame& f, const std::vector<Fp8Column>& cols, double Fp8Column::*field) {
  for (const Fp8Column& c : cols) {
    if (c.saturated <= 0) continue;
    const double v = c.*field;
    const float x = f.px(double(c.step));
    const float y = std::isnan(v) ? f.p0.y + 14 : std::max(f.p0.y + 14, f.py(std::log2(v)) - 5);
    f.dl->AddTriangleFilled({x, y}, {x - 4.5f, y - 9}, {x + 4.5f, y - 9}, u32(kFp8Saturated));
  }
}

// amax (thin line, dots) and the delayed window's max (a wide translucent band behind it).
void plot_amax(App& app, const std::vector<Shown>& shown, double x0, double x1, ImVec2 size, bool dots) {
  Log2Extent e;
  for (const Shown& t : shown) {
    e.add_series(values(t.cols, &Fp8Column::amax));
    e.add_series(values(t.cols, &Fp8Column::history_amax));
  }
  double y0, y1;
  e.range(y0, y1);
  PlotFrame f = begin_plot("fp8_amax", size, x0, x1, y0, y1, nullptr,
                           "amax, log2 axis: line = this step's, band = the largest in the amax history",
                           step_label, pow2_label, 0, 1);
  record(app, "fp8_amax", f);
  hover(f, shown);
  for (const Shown& t : shown) {
    draw_band(f, t.cols, &Fp8Column::history_amax, (t.color & 0x00FFFFFF) | (80u << 24), 7.0f);
    draw_line(f, t.cols, &Fp8Column::amax, true, t.color, 1.5f, false, dots, shown.size() == 1);
    for (const Fp8Column& c : t.cols)  // an amax of inf or NaN: the tensor overflowed before the cast
      if (c.nonfinite_amax) {
        const float x = f.px(double(c.step));
        f.dl->AddTriangleFilled({x, f.p0.y + 2}, {x - 5, f.p0.y + 11}, {x + 5, f.p0.y + 11}, u32(kFp8Saturated));
      }
  }
  end_plot(f);
  help_marker("The tensor's largest magnitude at each step, and the largest over the last L steps: the "
              "amax delayed scaling takes its next scale from. A spike holds the band up for L steps. "
              "A red mark on the top edge: the amax was inf or NaN (that step's scale is kept).");
}

// The scale cast with (a staircase, dots), the band up to the largest tile scale for block and
// MX recipes, and faintly what this step's own amax would ask for: fp8_max / amax.
void plot_scale(App& app, const std::vector<Shown>& shown, double x0, double x1, ImVec2 size, bool dots) {
  std::vector<std::vector<Fp8Column>> wanted(shown.size());  // fp8_max / amax, per column
  Log2Extent e;
  for (size_t k = 0; k < shown.size(); ++k) {
    wanted[k] = shown[k].cols;
    const double max = shown[k].series->format->max_finite();
    for (Fp8Column& c : wanted[k]) c.scale = max / c.amax;  // NaN stays NaN
    e.add_series(values(shown[k].cols, &Fp8Column::scale));
    e.add_series(values(shown[k].cols, &Fp8Column::scale_max));
    e.add_series(values(wanted[k], &Fp8Column::scale));
  }
  double y0, y1;
  e.range(y0, y1);
  PlotFrame f = begin_plot("fp8_scale", size, x0, x1, y0, y1, nullptr,
                           "scale, log2 axis: solid = cast with, faint = max / amax (what this step asks for)",
                           step_label, pow2_label, 0, 1);
  record(app, "fp8_scale", f);
  hover(f, shown);
  for (size_t k = 0; k < shown.size(); ++k) {
    const Shown& t = shown[k];
    const ImU32 faint = (t.color & 0x00FFFFFF) | (110u << 24);
    // Tiled recipes: a band from the smallest to the largest tile scale.
    for (size_t i = 0; i + 1 < t.cols.size(); ++i) {
      const Fp8Column &a = t.cols[i], &b = t.cols[i + 1];
      if (!(a.scale_max > a.scale) || std::isnan(b.scale) || std::isnan(b.scale_max)) continue;
      const float xa = f.px(double(a.step)), xb = f.px(double(b.step));
      f.dl->AddQuadFilled({xa, f.py(std::log2(a.scale))}, {xa, f.py(std::log2(a.scale_max))},
                          {xb, f.py(std::log2(a.scale_max))}, {xb, f.py(std::log2(a.scale))},
                          (t.color & 0x00FFFFFF) | (45u << 24));
    }
    draw_line(f, wanted[k], &Fp8Column::scale, true, faint, 1.0f, false, false);
    draw_line(f, t.cols, &Fp8Column::scale, true, t.color, 2.0f, true, dots, shown.size() == 1);
  }
  end_plot(f);
  help_marker("A cast is code = round(value · scale). Current scaling uses max / amax of the tensor "
              "itself (the faint line). Delayed scaling uses max / the window's largest amax, known "
              "before the tensor is: the solid line follows the faint one a step late, and stays low "
              "while a spike is in the window. Block and MX recipes give every tile its own scale: "
              "the band spans the smallest to the largest. A point far from both its neighbours "
              "(delayed scaling's first step, cast with scale 1 before any amax was seen) would squash "
              "the rest flat: it sits on the axis's edge with an arrow; hover for its value.");
}

// amax · scale, where the cast put the tensor's largest value, against the format's max.
void plot_product(App& app, const std::vector<Shown>& shown, double x0, double x1, ImVec2 size, bool dots) {
  Log2Extent e;
  std::vector<const FloatFormat*> formats;
  for (const Shown& t : shown) {
    e.add_series(values(t.cols, &Fp8Column::product));
    if (std::find(formats.begin(), formats.end(), t.series->format) == formats.end())
      formats.push_back(t.series->format);
  }
  for (const FloatFormat* fmt : formats) e.add(fmt->max_finite());
  double y0, y1;
  e.range(y0, y1);
  for (const FloatFormat* fmt : formats) y1 = std::max(y1, std::ceil(std::log2(fmt->max_finite())) + 1);  // room for the marks
  // The title names the max line(s): "red line: E4M3's max, 448".
  std::string maxes;
  for (const FloatFormat* fmt : formats)
    maxes += fmt::format("{}{}'s max, {:g}", maxes.empty() ? "" : " and ", fp8_format_name(fmt), fmt->max_finite());
  const std::string title = fmt::format("amax · scale, log2 axis; red line{}: {}; red marks: saturated",
                                        formats.size() > 1 ? "s" : "", maxes);
  PlotFrame f = begin_plot("fp8_product", size, x0, x1, y0, y1, nullptr, title.c_str(), step_label, pow2_label, 0, 1);
  record(app, "fp8_product", f);
  hover(f, shown);
  // Above the max a value is clamped: shaded when every tensor shown has the same max.
  if (formats.size() == 1)
    f.dl->AddRectFilled(f.p0, {f.p1.x, f.py(std::log2(formats[0]->max_finite()))}, IM_COL32(235, 75, 65, 28));
  // The max under the series, four rows of pixels high: a tensor cast by current scaling lies
  // right on it, and the line shows on both sides of it. Whole rows, not an anti-aliased line:
  // crisp at any size (and the screenshot test finds it by its colour).
  for (const FloatFormat* fmt : formats) {
    const float y = std::round(f.py(std::log2(fmt->max_finite())));
    f.dl->AddRectFilled({f.p0.x, y - 2}, {f.p1.x, y + 2}, u32(kFp8MaxLine));
  }
  for (const Shown& t : shown)
    draw_line(f, t.cols, &Fp8Column::product, true, t.color, 1.5f, false, dots, shown.size() == 1);
  for (const Shown& t : shown) saturation_marks(f, t.cols, &Fp8Column::product);
  end_plot(f);
  help_marker("The tensor's largest value after scaling. On the red line it lands exactly on the "
              "format's max (current scaling, margin 0). Above it, values are clamped to the max "
              "(saturated: a red mark over the step). The distance below the line is the headroom, "
              "in binades: room for the amax to grow, paid for with precision at the small end.");
}

// The share of the non-zero values each cast rounded to 0.
void plot_underflow(App& app, const std::vector<Shown>& shown, double x0, double x1, ImVec2 size, bool dots) {
  double top = 0;
  for (const Shown& t : shown)
    for (const Fp8Column& c : t.cols) top = std::max(top, 100 * c.underflow);
  const double y1 = std::max(0.1, top * 1.15);
  // A little below 0, so a run that never underflows shows its line above the frame.
  PlotFrame f = begin_plot("fp8_underflow", size, x0, x1, -0.06 * y1, y1, "step",
                           "underflow: % of the non-zero values rounded to 0", step_label,
                           [](double v) { return fmt::format("{:g}%", v); });
  record(app, "fp8_underflow", f);
  hover(f, shown);
  for (const Shown& t : shown) {
    std::vector<Fp8Column> pct = t.cols;
    for (Fp8Column& c : pct) c.underflow *= 100;
    draw_line(f, pct, &Fp8Column::underflow, false, t.color, 1.5f, false, dots);
  }
  end_plot(f);
  help_marker("Values whose |value · scale| is below half the format's smallest subnormal (2^-10 in "
              "E4M3, 2^-17 in E5M2) become 0. A scale too small for the tensor, as at a delayed "
              "recipe's first step (scale 1: its history is empty), flushes its small values.");
}

// ---- summary ----------------------------------------------------------------------------

// One line per tensor: when it saturated, the headroom, the underflow.
void draw_summary(const std::vector<Shown>& shown, const std::map<std::string, Fp8Summary>& sums) {
  for (const Shown& t : shown) {
    const Fp8Summary& s = sums.at(t.name);
    std::string text = fmt::format("{} ({}, max {:g}): ", t.name, fp8_format_name(t.series->format),
                                   t.series->format->max_finite());
    if (s.saturated_steps == 0) text += "never saturated";
    else
      text += fmt::format("saturated {} values in {} of {} steps (first at step {}, last at {})", s.saturated,
                          s.saturated_steps, s.steps, s.first_saturated, s.last_saturated);
    text += ";  ";
    // Headroom h binades: amax · scale sits h below the max (h < 0: above it, saturating).
    auto side = [](double h) {
      const std::string b = binades(std::fabs(h));
      return b == "0.00" ? std::string("on the max") : b + (h < 0 ? " binades above the max" : " binades below the max");
    };
    if (!std::isnan(s.median_headroom))
      text += fmt::format("amax·scale: median {}, worst {};  ", side(s.median_headroom), side(s.min_headroom));
    text += fmt::format("underflow at most {:.2f}% (step {}), {:.3f}% on average", 100 * s.max_underflow,
                        s.max_underflow_step, 100 * s.mean_underflow);
    if (s.nonfinite_amax) text += fmt::format(";  amax inf or NaN at {} steps", s.nonfinite_amax);
    ImGui::PushStyleColor(ImGuiCol_Text, t.color);
    ImGui::TextWrapped("%s", text.c_str());
    ImGui::PopStyleColor();
  }
}

}  // namespace

void draw_fp8_panel(App& app) {
  const int r = pick_run(app);
  if (r < 0) return;
  const RunSlot& slot = app.runs[r];
  const RunData& run = slot.data();
  draw_recipe(run);
  synthetic_banner(run);
  run_problems_lines(run);

  // The tensors shown: those picked that this run has (another run may have others).
  std::vector<std::string>& picked = app.fp8.tensors;
  picked.erase(std::remove_if(picked.begin(), picked.end(), [&](const std::string& t) { return !run.fp8.count(t); }),
               picked.end());
  if (picked.empty()) {  // the tensor that saturated at the most steps (the first when none did)
    const auto& sums = summaries(slot);
    std::string pick = run.fp8_tensors.front();
    for (const std::string& t : run.fp8_tensors)
      if (sums.at(t).saturated_steps > sums.at(pick).saturated_steps) pick = t;
    picked.push_back(pick);
  }

  const float fs = ImGui::GetFontSize();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  draw_tensor_list(app, slot, ImVec2(fs * 11.0f, avail.y));
  ImGui::SameLine();
  ImGui::BeginGroup();

  std::vector<Shown> shown;
  int64_t last = 0;
  for (size_t k = 0; k < picked.size(); ++k) {
    const Fp8Series& s = run.fp8.at(picked[k]);
    shown.push_back({picked[k], &s, u32(kFp8TensorColors[k % kColors]), {}});
    if (!s.points.empty()) last = std::max(last, s.points.back().step);
  }
  const double x0 = 0, x1 = double(last) + 1;
  const float width = ImGui::GetContentRegionAvail().x - fs * 1.6f;
  // The plots' inner width, as begin_plot lays it out (3.6 font sizes of labels, 0.6 of margin).
  const int cols = std::clamp(static_cast<int>(width - fs * 4.2f), 1, 16384);
  size_t most = 0;
  for (Shown& t : shown) {
    t.cols = columns_cached(*t.series, slot.reader->version(), x0, x1, cols);
    most = std::max(most, t.cols.size());
  }
  const bool dots = most * 6 < size_t(cols);  // few enough points to see each one

  const float gap = ImGui::GetStyle().ItemSpacing.y;
  const float summary_h = ImGui::GetTextLineHeightWithSpacing() * 2 * float(shown.size());  // two lines each
  const float h = std::max(4 * 60.0f, avail.y - summary_h - 4 * gap);
  plot_amax(app, shown, x0, x1, ImVec2(width, h * 0.26f), dots);
  plot_scale(app, shown, x0, x1, ImVec2(width, h * 0.26f), dots);
  plot_product(app, shown, x0, x1, ImVec2(width, h * 0.28f), dots);
  plot_underflow(app, shown, x0, x1, ImVec2(width, h * 0.20f), dots);
  draw_summary(shown, summaries(slot));
  ImGui::EndGroup();
}

}  // namespace hg::viewer
