// The Scale panel: the loss scale over time, and loss / accuracy, for several runs at once.
//
// Sections (grep for "----"):
//   legend       a checkbox per run, in its colour
//   loss scale   log2(scale) per step; skipped steps (inf/NaN found) marked in red
//   curves       train loss, and test (or train) accuracy
//
// Long runs (10^5 steps) are drawn one point per pixel column (min and max of the column), so
// a frame costs the same for any run length.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <imgui.h>

#include "viewer/app/app.h"
#include "viewer/app/widgets.h"

namespace hg::viewer {

namespace {

struct XRange {
  double x0 = 0, x1 = 1;
};

// ---- legend -----------------------------------------------------------------------------

// Up to kFirstRuns runs: a checkbox each. Beyond, the ticked runs' checkboxes, a line
// saying how many of how many, and a list to tick more from (only its rows in view are drawn).
void draw_legend(App& app) {
  const bool many = app.runs.size() > kFirstRuns;
  std::vector<size_t> in_legend;
  for (size_t i = 0; i < app.runs.size(); ++i)
    if (!many || app.runs[i].overlay) in_legend.push_back(i);
  if (many) {
    ImGui::Text("overlaying %zu of %zu runs:", in_legend.size(), app.runs.size());
    help_marker("With more runs than fit one legend, the first ones found are ticked. Tick more "
                "in the list to the right (each one is read when ticked), untick here.");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
    if (ImGui::BeginCombo("##more", "tick another run")) {
      ImGuiListClipper rows;
      rows.Begin(static_cast<int>(app.runs.size()));
      while (rows.Step())
        for (int i = rows.DisplayStart; i < rows.DisplayEnd; ++i) {
          ImGui::PushID(i);
          ImGui::Checkbox(app.runs[i].data().name.c_str(), &app.runs[i].overlay);
          ImGui::PopID();
        }
      ImGui::EndCombo();
    }
  } else {
    ImGui::TextUnformatted("runs:");
    help_marker("Tick the runs to overlay. The colour of a run is the same in every plot. Runs "
                "come from the folders given on the command line (default runs/).");
  }
  bool any_synthetic = false;
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  for (size_t i : in_legend) {
    app.listed.push_back(static_cast<int>(i));  // its label says its precision, from run.json
    RunSlot& r = app.runs[i];
    std::string label = r.data().name;
    const auto& rj = r.data().run_json;
    if (rj.is_object() && rj.contains("precision") && rj["precision"].is_string() &&
        label.find(rj["precision"].get<std::string>()) == std::string::npos)
      label += " (" + rj["precision"].get<std::string>() + ")";
    // Wrap to a new line when the checkbox would not fit.
    float w = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x +
              ImGui::CalcTextSize(label.c_str()).x;
    float next_x = ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x;
    if (next_x + w < right) ImGui::SameLine();
    ImGui::PushID(static_cast<int>(i));
    ImGui::PushStyleColor(ImGuiCol_Text, r.color);
    ImGui::Checkbox(label.c_str(), &r.overlay);
    ImGui::PopStyleColor();
    ImGui::PopID();
    any_synthetic |= r.overlay && r.data().synthetic;
  }
  if (any_synthetic) {
    ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 120, 110, 255));
    ImGui::TextUnformatted("SYNTHETIC DEMO DATA: these runs come from --make-demo-runs (a "
                           "statistical model), not from training a network.");
    ImGui::PopStyleColor();
  }
}

// One pixel column of a long series: the min, max and mean of the points that fall in it.
struct Column {
  int col;
  double lo, hi, mean;
};

// Columns of `pts` for a plot `cols` pixels wide over [x0, x1). Cached: a series only changes
// when its run's reader moves on (`version`), so most frames reuse the last result.
template <class Points, class Get>
const std::vector<Column>& columns_of(const Points& pts, Get get, int tag, uint64_t version,
                                      double x0, double x1, int cols) {
  struct Key {
    const void* data;
    size_t size;
    int tag;
    uint64_t version;
    double x0, x1;
    int cols;
    bool operator<(const Key& o) const {
      return std::tie(data, size, tag, version, x0, x1, cols) <
             std::tie(o.data, o.size, o.tag, o.version, o.x0, o.x1, o.cols);
    }
  };
  static std::map<Key, std::vector<Column>> cache;
  Key key{pts.data(), pts.size(), tag, version, x0, x1, cols};
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  if (cache.size() > 64) cache.clear();  // old sizes and widths: forget them
  std::vector<Column>& out = cache[key];
  int col = -1, n = 0;
  double lo = 0, hi = 0, sum = 0;
  auto flush = [&]() {
    if (n) out.push_back({col, lo, hi, sum / n});
  };
  for (const auto& p : pts) {
    double x = double(p.step), y = get(p);
    if (!std::isfinite(y)) continue;
    const double at = (x - x0) / (x1 - x0) * cols;  // checked before the cast to int
    if (!(at >= 0 && at < cols)) continue;
    const int c = static_cast<int>(at);
    if (c != col) {
      flush();
      col = c, lo = hi = sum = y, n = 1;
      continue;
    }
    lo = std::min(lo, y), hi = std::max(hi, y), sum += y, ++n;
  }
  flush();
  return out;
}

// A long series drawn per pixel column: a faint min..max segment and a line through the means.
template <class Points, class Get>
void draw_series(const PlotFrame& f, const Points& pts, Get get, int tag, uint64_t version,
                 ImU32 color, float thickness) {
  const int cols = std::clamp(static_cast<int>(f.p1.x - f.p0.x), 1, 16384);
  const auto& columns = columns_of(pts, get, tag, version, f.x0, f.x1, cols);
  std::vector<ImVec2> line;
  line.reserve(columns.size());
  for (const Column& c : columns) {
    float x = f.p0.x + c.col + 0.5f;
    if (c.hi > c.lo) f.dl->AddLine({x, f.py(c.lo)}, {x, f.py(c.hi)}, (color & 0x00FFFFFF) | (90u << 24));
    line.push_back({x, f.py(c.mean)});
  }
  if (line.size() == 1) f.dl->AddCircleFilled(line[0], 3, color);
  draw_polyline(f.dl, line, color, thickness);
}

// ---- loss scale -------------------------------------------------------------------------

void draw_loss_scale(App& app, XRange xr, ImVec2 size) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& r : app.runs) {
    if (!r.overlay) continue;
    for (const auto& p : r.data().loss_scale) {
      if (!(p.scale > 0) || !std::isfinite(p.scale)) continue;  // "inf"/"nan" in the log
      lo = std::min(lo, std::log2(p.scale)), hi = std::max(hi, std::log2(p.scale));
    }
  }
  if (!(hi >= lo)) {
    ImGui::TextDisabled("loss scale: none of the ticked runs logged one (fp32, fp16_naive and "
                        "bf16 runs train without a loss scale).");
    return;
  }
  PlotFrame f = begin_plot("scale", size, xr.x0, xr.x1, std::floor(lo) - 1, std::ceil(hi) + 2,
                           nullptr, "loss scale (log2 axis); red ticks: skipped steps", step_label,
                           pow2_label, 0, hi - lo > 48 ? 0 : hi - lo > 12 ? 4 : hi - lo > 6 ? 2 : 1);
  if (ImGui::IsItemHovered()) {
    const double step = f.x_at(ImGui::GetIO().MousePos.x);
    ImGui::BeginTooltip();
    ImGui::Text("step %.0f", step);
    for (const auto& r : app.runs) {
      const auto& v = r.data().loss_scale;
      if (!r.overlay || v.empty()) continue;
      auto k = std::lower_bound(v.begin(), v.end(), step,
                                [](const LossScalePoint& p, double s) { return p.step < s; });
      if (k == v.end()) --k;
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(r.color), "%s: scale %g = 2^%g%s",
                         r.data().name.c_str(), k->scale, std::log2(k->scale),
                         k->skipped ? "  (step skipped: inf/NaN found)" : "");
    }
    ImGui::EndTooltip();
  }
  for (const auto& r : app.runs) {
    if (!r.overlay || r.data().loss_scale.empty()) continue;
    // The scale is a step function: draw only where it changes.
    std::vector<ImVec2> pts;
    double prev = std::numeric_limits<double>::quiet_NaN();
    for (const auto& p : r.data().loss_scale) {
      if (!(p.scale > 0) || !std::isfinite(p.scale)) continue;
      double y = std::log2(p.scale);
      if (y != prev) {
        if (!pts.empty()) pts.push_back(f.map(double(p.step), prev));
        pts.push_back(f.map(double(p.step), y));
        prev = y;
      }
    }
    if (pts.empty()) continue;
    pts.push_back(f.map(double(r.data().loss_scale.back().step), prev));
    f.dl->AddPolyline(pts.data(), static_cast<int>(pts.size()), r.color, 0, 2.0f);
    // skipped steps: a red tick above the line (one per pixel column at most)
    float last_x = -1e9f;
    for (const auto& p : r.data().loss_scale) {
      if (!p.skipped || !(p.scale > 0) || !std::isfinite(p.scale)) continue;
      ImVec2 a = f.map(double(p.step), std::log2(p.scale));
      if (a.x - last_x < 1.0f) continue;
      last_x = a.x;
      f.dl->AddTriangleFilled({a.x, a.y - 4}, {a.x - 4, a.y - 12}, {a.x + 4, a.y - 12},
                              IM_COL32(255, 70, 60, 255));
    }
  }
  // skipped steps per run, in the run's colour, top right; as many lines as the plot holds,
  // the last saying how many runs are left out
  std::vector<const RunSlot*> with_scale;
  for (const auto& r : app.runs)
    if (r.overlay && !r.data().loss_scale.empty()) with_scale.push_back(&r);
  const float line_h = ImGui::GetFontSize() + 2;
  const size_t fit = static_cast<size_t>(std::max(1.0f, (f.p1.y - f.p0.y - 8) / line_h));
  float ty = f.p0.y + 4;
  for (size_t k = 0; k < with_scale.size() && k < fit; ++k) {
    const RunSlot& r = *with_scale[k];
    std::string t;
    ImU32 color = r.color;
    if (k + 1 == fit && with_scale.size() > fit) {
      t = fmt::format("and {} more runs", with_scale.size() - k);
      color = ImGui::GetColorU32(ImGuiCol_Text);
    } else {
      int64_t n = 0;
      for (const auto& p : r.data().loss_scale) n += p.skipped;
      t = fmt::format("{}: {} skipped", r.data().name, n);
    }
    const ImVec2 ts = ImGui::CalcTextSize(t.c_str()), at = {f.p1.x - ts.x - 6, ty};
    // on a dark box: the counts sit over the lines they describe
    f.dl->AddRectFilled({at.x - 4, at.y - 1}, {at.x + ts.x + 3, at.y + ts.y + 1}, IM_COL32(10, 10, 14, 215), 3);
    f.dl->AddText(at, color, t.c_str());
    ty += line_h;
  }
  end_plot(f);
  help_marker("The number the loss is multiplied by before backward, so small gradients stay "
              "above FP16's 2^-24. A dynamic scaler (chapter 09) halves it and skips the "
              "optimizer step when a gradient overflowed (red), and doubles it after 2000 good "
              "steps: the saw-tooth. A static scale (chapter 08) stays flat.");
}

// ---- curves -----------------------------------------------------------------------------

void draw_curve(App& app, XRange xr, ImVec2 size, const std::vector<const char*>& names,
                const char* title, bool log_y, const char* help) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& r : app.runs) {
    if (!r.overlay) continue;
    for (const char* n : names) {
      auto it = r.data().scalars.find(n);
      if (it == r.data().scalars.end()) continue;
      // The y range from the cached columns (min and max of every column = of all points).
      const int cols = std::clamp(static_cast<int>(size.x), 1, 16384);
      const auto& columns = columns_of(
          it->second, [&](const ScalarPoint& p) { return log_y ? std::log10(p.value) : p.value; },
          log_y, r.reader->version(), xr.x0, xr.x1, cols);
      for (const Column& c : columns) lo = std::min(lo, c.lo), hi = std::max(hi, c.hi);
      break;  // the first name a run has
    }
  }
  if (!(hi >= lo)) {
    ImGui::TextDisabled("%s: not logged by the ticked runs", title);
    ImGui::Dummy(ImVec2(size.x, size.y - ImGui::GetTextLineHeightWithSpacing()));
    return;
  }
  // 5% margins; a flat or single-point series still gets a readable span (2% of its value).
  // (hi / 2 - lo / 2: no overflow for values near the doubles' limit.)
  double pad = std::max({(hi / 2 - lo / 2) * 0.1, 0.02 * std::max(std::fabs(lo), std::fabs(hi)), 1e-9});
  TickLabel pow10 = [](double v) { return fmt::format("{:.3g}", std::pow(10.0, v)); };
  TickLabel ylab = log_y ? pow10 : nullptr;
  PlotFrame f = begin_plot(title, size, xr.x0, xr.x1, lo - pad, hi + pad, "step", title, step_label,
                           ylab, 0, log_y ? kLog10Ticks : 0);
  const bool hovered = ImGui::IsItemHovered();
  const double hover_step = f.x_at(ImGui::GetIO().MousePos.x);
  if (hovered) {
    ImGui::BeginTooltip();
    ImGui::Text("step %.0f", hover_step);
  }
  for (const auto& r : app.runs) {
    if (!r.overlay) continue;
    for (const char* n : names) {
      auto it = r.data().scalars.find(n);
      if (it == r.data().scalars.end()) continue;
      draw_series(f, it->second,
                  [&](const ScalarPoint& p) { return log_y ? std::log10(p.value) : p.value; },
                  log_y, r.reader->version(), r.color, 1.8f);
      if (hovered) {  // the logged point nearest the mouse
        const auto& v = it->second;
        auto k = std::lower_bound(v.begin(), v.end(), hover_step,
                                  [](const ScalarPoint& p, double s) { return p.step < s; });
        if (k == v.end()) --k;
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(r.color), "%s: %s %.4g (step %lld)",
                           r.data().name.c_str(), n, k->value, static_cast<long long>(k->step));
      }
      break;
    }
  }
  if (hovered) {
    ImGui::EndTooltip();
    float x = f.px(hover_step);
    f.dl->AddLine({x, f.p0.y}, {x, f.p1.y}, IM_COL32(255, 255, 255, 90));
  }
  end_plot(f);
  help_marker(help);
}

}  // namespace

void draw_scale_panel(App& app) {
  if (app.runs.empty()) {
    ImGui::TextWrapped("No runs. Give run folders on the command line, or write synthetic demo "
                       "runs with: halfgrad-viewer --make-demo-runs runs/");
    return;
  }
  draw_budget_line(app);
  draw_legend(app);
  // The problems of the first few runs overlaid that have any; a line for the rest, so that
  // many runs in trouble do not push the plots off the panel.
  constexpr size_t kProblemRuns = 4;
  size_t in_trouble = 0;
  for (const auto& r : app.runs) {
    if (!r.overlay || run_problems(r.data()).empty()) continue;
    if (++in_trouble <= kProblemRuns) run_problems_lines(r.data());
  }
  if (in_trouble > kProblemRuns)
    ImGui::TextColored(ImVec4(1.0f, 0.59f, 0.39f, 1.0f),
                       "and %zu more runs with problems (the Runs panel marks them with !)", in_trouble - kProblemRuns);
  XRange xr;
  for (const auto& r : app.runs)
    if (r.overlay) xr.x1 = std::max(xr.x1, double(r.data().max_step + 1));
  ImVec2 avail = ImGui::GetContentRegionAvail();
  float gap = ImGui::GetStyle().ItemSpacing.y;
  // Runs without a loss scale (FP32, BF16, naive FP16) get one line here, the curves the rest.
  bool any_scale = false;
  for (const auto& r : app.runs) any_scale |= r.overlay && !r.data().loss_scale.empty();
  float scale_h = any_scale ? avail.y * 0.36f - gap : ImGui::GetTextLineHeightWithSpacing();
  draw_loss_scale(app, xr, ImVec2(avail.x - ImGui::GetFontSize() * 2, scale_h));
  float w = (avail.x - ImGui::GetStyle().ItemSpacing.x) * 0.5f - ImGui::GetFontSize() * 2;
  ImVec2 half(w, avail.y - scale_h - 2 * gap);
  draw_curve(app, xr, half, {"train/loss"}, "train loss (log axis)", true,
             "Cross-entropy on each training batch (a band: min..max of the steps that share a "
             "pixel; the line: their mean). Naive FP16 (chapter 06) stalls above the others: "
             "most of its small weight updates round away (lost updates).");
  ImGui::SameLine();
  draw_curve(app, xr, half, {"test/accuracy", "train/accuracy"}, "test accuracy", false,
             "Accuracy on the test set after each epoch (train accuracy for runs that log no "
             "test accuracy). A loss scale, autocast or BF16 should match FP32 here.");
}

}  // namespace hg::viewer
