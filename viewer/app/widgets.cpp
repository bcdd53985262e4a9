// Drawing helpers shared by the panels (see widgets.h).
#include "viewer/app/widgets.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace hg::viewer {

void help_marker(const char* text) {
  ImGui::SameLine();
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

void synthetic_banner(const RunData& run) {
  if (!run.synthetic) return;
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 120, 110, 255));
  ImGui::Text("SYNTHETIC DEMO DATA (%s): made by --make-demo-runs, no network was trained",
              run.name.c_str());
  ImGui::PopStyleColor();
}

std::string pow2_label(double e) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "2^%.0f", std::round(e) + 0.0);  // + 0.0: no "2^-0"
  return buf;
}

std::string step_label(double s) {
  char buf[32];
  if (std::fabs(s) >= 1e12) std::snprintf(buf, sizeof buf, "%.3gT", s / 1e12);
  else if (std::fabs(s) >= 1e9) std::snprintf(buf, sizeof buf, "%.3gG", s / 1e9);
  else if (std::fabs(s) >= 1e6) std::snprintf(buf, sizeof buf, "%.3gM", s / 1e6);
  else if (std::fabs(s) >= 1e3) std::snprintf(buf, sizeof buf, "%.3gk", s / 1e3);
  else std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

static std::string plain_label(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

PlotFrame begin_plot(const char* id, ImVec2 size, double x0, double x1, double y0, double y1,
                     const char* x_title, const char* y_title, TickLabel x_label,
                     TickLabel y_label, double x_step, double y_step) {
  if (!x_label) x_label = plain_label;
  if (!y_label) y_label = plain_label;
  sane_range(x0, x1);
  sane_range(y0, y1);
  const float fs = ImGui::GetFontSize();
  ImVec2 outer0 = ImGui::GetCursorScreenPos();
  size = {std::max(size.x, 1.0f), std::max(size.y, 1.0f)};  // ImGui asserts on a zero size
  ImGui::InvisibleButton(id, size);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  PlotFrame f;
  f.dl = dl;
  f.p0.y = outer0.y + fs * (y_title && *y_title ? 1.3f : 0.4f);
  f.p1.y = outer0.y + size.y - fs * (x_title && *x_title ? 2.6f : 1.5f);
  f.x0 = x0, f.x1 = x1, f.y0 = y0, f.y1 = y1;

  // As many ticks as labels fit; a fixed step (binades) is widened when it would give more.
  const int y_fit = std::clamp(int((f.p1.y - f.p0.y) / (fs * 1.2f)), 2, kMaxTicks);
  if (y_step > 0) y_step = fit_step(y_step, y1 - y0, y_fit);
  else if (y_step != kLog10Ticks) y_step = nice_step(y1 - y0, std::max(2, int((f.p1.y - f.p0.y) / (fs * 2.5f))));
  // The tick positions are computed (and capped) first: the loops below cannot run away.
  const std::vector<double> y_ticks = y_step == kLog10Ticks ? log10_ticks(y0, y1) : linear_ticks(y0, y1, y_step);
  // The labels of the y axis decide the left margin: 3.6 font sizes, or more for wide ones
  // ("80.0 MiB").
  float label_w = fs * 3.6f - 4;
  for (double y : y_ticks) label_w = std::max(label_w, ImGui::CalcTextSize(y_label(y).c_str()).x);
  f.p0.x = outer0.x + label_w + 4;
  f.p1.x = outer0.x + size.x - fs * 0.6f;

  const ImU32 grid = IM_COL32(255, 255, 255, 28), text = ImGui::GetColorU32(ImGuiCol_Text);
  dl->AddRectFilled(f.p0, f.p1, IM_COL32(kPlotBackground.r, kPlotBackground.g, kPlotBackground.b, 255));
  const int x_fit = std::clamp(int((f.p1.x - f.p0.x) / (fs * 3)), 2, kMaxTicks);
  if (x_step > 0) x_step = fit_step(x_step, x1 - x0, x_fit);
  else x_step = nice_step(x1 - x0, std::max(2, int((f.p1.x - f.p0.x) / (fs * 6))));
  for (double x : linear_ticks(x0, x1, x_step)) {
    float sx = f.px(x);
    dl->AddLine({sx, f.p0.y}, {sx, f.p1.y}, grid);
    std::string s = x_label(x);
    float w = ImGui::CalcTextSize(s.c_str()).x;
    dl->AddText({sx - w * 0.5f, f.p1.y + 2}, text, s.c_str());
  }
  for (double y : y_ticks) {
    float sy = f.py(y);
    dl->AddLine({f.p0.x, sy}, {f.p1.x, sy}, grid);
    std::string s = y_label(y);
    float w = ImGui::CalcTextSize(s.c_str()).x;
    dl->AddText({f.p0.x - w - 4, sy - fs * 0.5f}, text, s.c_str());
  }
  if (x_title && *x_title) {
    float w = ImGui::CalcTextSize(x_title).x;
    dl->AddText({(f.p0.x + f.p1.x - w) * 0.5f, f.p1.y + fs * 1.3f}, text, x_title);
  }
  if (y_title && *y_title) dl->AddText({outer0.x, outer0.y}, text, y_title);
  dl->AddRect(f.p0, f.p1, IM_COL32(255, 255, 255, 70));
  dl->PushClipRect(f.p0, f.p1, true);
  return f;
}

void end_plot(const PlotFrame& f) { f.dl->PopClipRect(); }

void draw_polyline(ImDrawList* dl, const std::vector<ImVec2>& pts, ImU32 color, float thickness) {
  const bool dots = thickness > 1.5f && (color >> IM_COL32_A_SHIFT) == 255;  // a translucent dot would show
  for (size_t i = 1; i < pts.size(); ++i) {
    dl->AddLine(pts[i - 1], pts[i], color, thickness);
    if (dots && i + 1 < pts.size()) dl->AddCircleFilled(pts[i], 0.5f * thickness, color);
  }
}

ImU32 run_color(int i) {
  static const ImU32 colors[] = {
      IM_COL32(230, 230, 230, 255),  // white-ish
      IM_COL32(240, 90, 80, 255),    // red
      IM_COL32(250, 170, 60, 255),   // orange
      IM_COL32(90, 180, 250, 255),   // blue
      IM_COL32(110, 210, 120, 255),  // green
      IM_COL32(200, 130, 240, 255),  // violet
      IM_COL32(240, 220, 90, 255),   // yellow
      IM_COL32(90, 220, 210, 255),   // teal
  };
  return colors[static_cast<unsigned>(i) % (sizeof colors / sizeof colors[0])];
}

ImU32 heat_color(double t) {
  const Rgb c = heat_rgb(t);
  return IM_COL32(c.r, c.g, c.b, 255);
}

void run_problems_lines(const RunData& run) {
  const std::vector<std::string> problems = run_problems(run);
  if (problems.empty()) return;
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(255, 150, 100, 255));
  for (const std::string& p : problems) ImGui::TextWrapped("run %s: %s", run.name.c_str(), p.c_str());
  ImGui::PopStyleColor();
}

}  // namespace hg::viewer
