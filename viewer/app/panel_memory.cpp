// The Memory panel: where a run's bytes went, step by step (the `memory` events of the run
// log, written by framework/memory/report.h).
//
// Sections (grep for "----"):
//   pickers     the run, and the device when it logged both
//   the stack   each step's peak, stacked by category (parameters at the bottom)
//   the table   the largest peak of the run, category by category
//
// Each event is the peak of one step with what each category held at that moment, so the top
// of the stack is the step's peak. Long runs are drawn one pixel column at a time (the step
// with the largest peak in the column), so a frame costs the same for any run length.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <imgui.h>

#include "viewer/app/app.h"
#include "viewer/app/memory_colors.h"
#include "viewer/app/widgets.h"

namespace hg::viewer {

namespace {

constexpr int kCats = MemoryPoint::kCategories;

static_assert(kCats == 5, "one colour per category in memory_colors.h");
ImU32 color(int k) { return IM_COL32(kMemoryColors[k].r, kMemoryColors[k].g, kMemoryColors[k].b, 255); }

// Byte counts for people, 1024-based: "512 B", "3.4 KiB", "12.5 MiB", "1.21 GiB".
std::string bytes_label(double b) {
  if (b < 1024) return fmt::format("{:.0f} B", b);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  if (b < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
}

// Ticks at round numbers of the unit the axis shows (1, 2 or 5 · 10^k KiB/MiB/GiB), about
// five of them, so the labels read "20.0 MiB", not "19.1 MiB".
double byte_tick_step(double top) {
  double unit = 1;
  while (top / unit >= 1024 && unit < 1024.0 * 1024 * 1024) unit *= 1024;
  const double raw = top / unit / 5;
  const double p10 = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  const double m = raw / p10;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p10 * unit;
}

// ---- pickers ----------------------------------------------------------------------------

// The selected run's points for the selected device; nullptr (and a line saying why) when no
// run logged memory.
const std::vector<MemoryPoint>* draw_pickers(App& app) {
  draw_budget_line(app);
  MemoryState& m = app.memory;
  std::vector<int> with_memory;
  for (size_t i = 0; i < app.runs.size(); ++i)
    if (!app.runs[i].data().memory.empty()) with_memory.push_back(static_cast<int>(i));
  if (!app.has_run(m.run)) {  // none picked: the first run read that has memory events
    if (with_memory.empty()) {
      ImGui::TextWrapped("No run with memory events yet. A training program logs one per step "
                         "with hg::memory::log_memory (framework/memory/report.h); chapter 12 "
                         "does, and so do the synthetic demo runs (--make-demo-runs runs/).");
      for (const RunSlot& r : app.runs) run_problems_lines(r.data());  // perhaps why
      return nullptr;
    }
    m.run = with_memory[0];
  }
  const RunData& run = app.runs[m.run].data();
  const float fs = ImGui::GetFontSize();
  ImGui::SetNextItemWidth(fs * 13);
  if (ImGui::BeginCombo("run", run.name.c_str())) {
    for (int i : with_memory)
      if (ImGui::Selectable(app.runs[i].data().name.c_str(), i == m.run)) m.run = i;
    ImGui::EndCombo();
  }
  help_marker("A run folder with memory events (docs/run-log.md). Runs are listed in the Runs panel.");
  if (run.memory.empty()) {  // the run picked stays picked: the panel says what it lacks
    ImGui::TextWrapped("%s: no memory events%s.", run.name.c_str(), app.reading(m.run));
    run_problems_lines(run);
    return nullptr;
  }
  if (!run.memory.count(m.device)) m.device = run.memory.begin()->first;
  for (const auto& [device, points] : run.memory) {
    ImGui::SameLine();
    if (ImGui::RadioButton(device.c_str(), m.device == device)) m.device = device;
  }
  help_marker("The device whose memory is shown. A GPU run logs the GPU's memory (cuda); the "
              "CPU's (cpu) holds little more than the data loader's batches then.");
  synthetic_banner(run);
  run_problems_lines(run);
  return &run.memory.at(m.device);
}

// ---- the stack --------------------------------------------------------------------------

// One step per pixel column: the point with the largest peak among those in the column.
std::vector<const MemoryPoint*> per_column(const std::vector<MemoryPoint>& pts, double x0, double x1, int cols) {
  std::vector<const MemoryPoint*> out;
  int last_col = -1;
  for (const MemoryPoint& p : pts) {
    const double at = (double(p.step) - x0) / (x1 - x0) * cols;
    if (!(at >= 0 && at <= cols)) continue;
    const int c = std::min(cols - 1, static_cast<int>(at));
    if (c != last_col) {
      out.push_back(&p);
      last_col = c;
    } else if (p.peak > out.back()->peak) {
      out.back() = &p;
    }
  }
  return out;
}

// The legend, one line above the plot, in the stack's order (bottom first).
void draw_legend() {
  for (int k = 0; k < kCats; ++k) {
    if (k) ImGui::SameLine(0, ImGui::GetFontSize());
    ImGui::ColorButton(MemoryPoint::name(k), ImGui::ColorConvertU32ToFloat4(color(k)),
                       ImGuiColorEditFlags_NoTooltip | ImGuiColorEditFlags_NoDragDrop,
                       ImVec2(ImGui::GetFontSize(), ImGui::GetFontSize()));
    ImGui::SameLine();
    ImGui::TextUnformatted(MemoryPoint::name(k));
  }
}

void draw_stack(const std::vector<MemoryPoint>& pts, ImVec2 size) {
  draw_legend();
  size.y -= ImGui::GetFrameHeightWithSpacing();
  int64_t top = 0, last_step = 0;
  for (const MemoryPoint& p : pts) top = std::max(top, p.peak), last_step = std::max(last_step, p.step);
  const double x1 = double(last_step) + 1, y1 = std::max(1.0, double(top) * 1.12);
  PlotFrame f = begin_plot("memory", size, 0, x1, 0, y1, "step", "bytes at the step's peak", step_label,
                           bytes_label, 0, byte_tick_step(y1));
  const bool hovered = ImGui::IsItemHovered();
  const int cols = std::clamp(static_cast<int>(f.p1.x - f.p0.x), 1, 16384);
  const auto shown = per_column(pts, 0, x1, cols);
  // Category k fills the band between the sum of the categories below it and that plus its own.
  // Between two neighbouring steps a band is a trapezoid with vertical sides (convex, as
  // AddQuadFilled wants); a single step is a bar. Without anti-aliasing: the soft edges of
  // neighbouring trapezoids would show as dark seams between them.
  const ImDrawListFlags saved_flags = f.dl->Flags;
  f.dl->Flags &= ~ImDrawListFlags_AntiAliasedFill;
  for (int k = 0; k < kCats; ++k) {
    auto band = [&](const MemoryPoint& p, double& lo, double& hi) {
      lo = 0;
      for (int j = 0; j < k; ++j) lo += double(p.bytes[j]);
      hi = lo + double(p.bytes[k]);
    };
    for (size_t i = 0; i < shown.size(); ++i) {
      double lo_a, hi_a;
      band(*shown[i], lo_a, hi_a);
      const float xa = f.px(double(shown[i]->step));
      if (shown.size() == 1) {
        f.dl->AddRectFilled({xa - 6, f.py(hi_a)}, {xa + 6, f.py(lo_a)}, color(k));
        continue;
      }
      if (i + 1 == shown.size()) break;
      double lo_b, hi_b;
      band(*shown[i + 1], lo_b, hi_b);
      const float xb = f.px(double(shown[i + 1]->step));
      f.dl->AddQuadFilled({xa, f.py(lo_a)}, {xa, f.py(hi_a)}, {xb, f.py(hi_b)}, {xb, f.py(lo_b)}, color(k));
    }
  }
  f.dl->Flags = saved_flags;
  if (hovered && !pts.empty()) {
    const double step = f.x_at(ImGui::GetIO().MousePos.x);
    auto it = std::lower_bound(pts.begin(), pts.end(), step,
                               [](const MemoryPoint& p, double s) { return double(p.step) < s; });
    if (it == pts.end()) --it;
    ImGui::BeginTooltip();
    ImGui::Text("step %lld: peak %s", static_cast<long long>(it->step), bytes_label(double(it->peak)).c_str());
    for (int k = kCats - 1; k >= 0; --k)
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(color(k)), "%-16s %s", MemoryPoint::name(k),
                         bytes_label(double(it->bytes[k])).c_str());
    ImGui::Text("live after the step: %s", bytes_label(double(it->live)).c_str());
    ImGui::EndTooltip();
    const float x = f.px(double(it->step));
    f.dl->AddLine({x, f.p0.y}, {x, f.p1.y}, IM_COL32(255, 255, 255, 90));
  }
  end_plot(f);
  help_marker("Each step's peak, stacked by what the bytes were for at that moment. Parameters, "
              "gradients and optimizer state are the model states: they stay from step to step "
              "(the gradients and Adam's moments appear after the first step). Activations are "
              "what the forward pass keeps for backward: they grow with the batch and the depth, "
              "and activation checkpointing cuts them. Temporaries: op outputs on their way, casts.");
}

// ---- the table --------------------------------------------------------------------------

void draw_table(const std::vector<MemoryPoint>& pts) {
  const MemoryPoint* peak = &pts.front();
  for (const MemoryPoint& p : pts)
    if (p.peak > peak->peak) peak = &p;
  ImGui::Text("largest peak: %s at step %lld", bytes_label(double(peak->peak)).c_str(),
              static_cast<long long>(peak->step));
  help_marker("The moment the run held the most, and what each category held then (the "
              "printed table at the end of a run says the same, as 'at peak').");
  if (!ImGui::BeginTable("at_peak", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingFixedFit)) return;
  ImGui::TableSetupColumn("category");
  ImGui::TableSetupColumn("bytes");
  ImGui::TableSetupColumn("share");
  ImGui::TableHeadersRow();
  for (int k = 0; k < kCats; ++k) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(color(k)), "%s", MemoryPoint::name(k));
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(bytes_label(double(peak->bytes[k])).c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%5.1f %%", peak->peak > 0 ? 100.0 * double(peak->bytes[k]) / double(peak->peak) : 0.0);
  }
  ImGui::EndTable();
}

}  // namespace

void draw_memory_panel(App& app) {
  const std::vector<MemoryPoint>* pts = draw_pickers(app);
  if (!pts || pts->empty()) return;
  ImVec2 avail = ImGui::GetContentRegionAvail();
  const float table_h = ImGui::GetTextLineHeightWithSpacing() * 8.5f;
  draw_stack(*pts, ImVec2(avail.x - ImGui::GetFontSize() * 2, std::max(120.0f, avail.y - table_h)));
  draw_table(*pts);
}

}  // namespace hg::viewer
