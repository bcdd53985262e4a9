// The Gradients panel: where a layer's gradients sit against FP16's range.
//
// Sections (grep for "----"):
//   pickers      run, parameter, step
//   histogram    log2|g| at one step, FP16's zones shaded; the scaled and the true gradient
//   heat map     every logged step at once: x step, y exponent, colour count
//   per layer    % of each parameter's gradient below 2^-24 (or exactly 0, for F16 values),
//                in FP16's subnormal range, or whose update was lost, over time
//
// The logged histogram is of the gradient as backward produced it, i.e. multiplied by the loss
// scale (docs/run-log.md), in the format backward held it in (its dtype). The true gradient is
// the same histogram shifted by log2(scale) bins. An F16 gradient holds nothing below 2^-24:
// what underflowed is already 0, so the panel shows its zeros where a wider format's
// "below 2^-24" would be (plot_math.h words each format). FP16's zones come from kFP16
// (framework/dtype), never typed in here.
#define GL_GLEXT_PROTOTYPES 1
#include <GL/gl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>
#include <imgui.h>

#include "viewer/app/app.h"
#include "viewer/app/widgets.h"

namespace hg::viewer {

namespace {

// FP16's zones as binary exponents e (a value in bin e has 2^e <= |g| < 2^(e+1)).
struct Fp16Zones {
  int e_sub;   // -24: the smallest subnormal; bins below round to 0 (at most 2^-25) or up to 2^-24
  int e_norm;  // -14: the smallest normal; bins e_sub..e_norm-1 are subnormal
  int e_max;   //  15: the largest finite (65504) is in this bin; above it overflows
};
// The bin e_max (2^15 <= |g| < 2^16) is split: FP16 holds its values up to 65504 and turns
// those above into inf. On a log2 axis 65504 sits at 15.9998, too close to 16 to draw, so the
// whole bin is hatched as "partly overflows" instead of being shaded as normal.
Fp16Zones fp16_zones() {
  return {std::ilogb(kFP16.min_subnormal()), std::ilogb(kFP16.min_normal()),
          std::ilogb(kFP16.max_finite())};
}

// Red diagonal hatching over the bin [e, e+1): part of it overflows.
void hatch_bin(const PlotFrame& f, int e) {
  float x0 = std::max(f.p0.x, f.px(e)), x1 = std::min(f.p1.x, f.px(e + 1));
  if (x1 <= x0) return;
  const ImU32 c = IM_COL32(230, 70, 60, 150);
  f.dl->PushClipRect({x0, f.p0.y}, {x1, f.p1.y}, true);
  const float w = x1 - x0, step = 7.0f;
  for (float y = f.p0.y - w; y < f.p1.y; y += step) f.dl->AddLine({x0, y + w}, {x1, y}, c, 1.0f);
  f.dl->PopClipRect();
}

// FP16's zones behind the histogram; the one below 2^-24 labelled for the values' format.
void shade_zones_x(const PlotFrame& f, GradDtype dtype) {
  const Fp16Zones z = fp16_zones();
  // wrap: the label breaks into lines as wide as the band (0: one line).
  auto band = [&](double a, double b, ImU32 c, const char* label, bool wrap = false) {
    float x0 = std::max(f.p0.x, f.px(a)), x1 = std::min(f.p1.x, f.px(b));
    if (x1 <= x0) return;
    f.dl->AddRectFilled({x0, f.p0.y}, {x1, f.p1.y}, c);
    f.dl->AddText(nullptr, 0.0f, {x0 + 3, f.p0.y + 2}, IM_COL32(230, 230, 230, 200), label, nullptr,
                  wrap ? std::max(1.0f, x1 - x0 - 6) : 0.0f);
  };
  band(f.x0, z.e_sub, IM_COL32(120, 120, 130, 70), below_fp16_label(dtype).c_str(), true);
  band(z.e_sub, z.e_norm, IM_COL32(80, 150, 220, 60), "subnormal");
  band(z.e_norm, z.e_max, IM_COL32(80, 200, 120, 30), "normal");
  band(z.e_max, z.e_max + 1, IM_COL32(80, 200, 120, 30), "");
  hatch_bin(f, z.e_max);
  band(z.e_max + 1, f.x1, IM_COL32(230, 70, 60, 80), "overflow");
}

// The histograms of the selected parameter.
const std::vector<GradHist>* param_hists(const RunData& run, const std::string& param) {
  auto it = run.grads.find(param);
  return it == run.grads.end() ? nullptr : &it->second;
}

int nearest_index(const std::vector<GradHist>& h, int64_t step) {
  if (step < 0) return static_cast<int>(h.size()) - 1;
  auto it = std::lower_bound(h.begin(), h.end(), step,
                             [](const GradHist& a, int64_t s) { return a.step < s; });
  if (it == h.end()) return static_cast<int>(h.size()) - 1;
  if (it != h.begin() && step - (it - 1)->step < it->step - step) --it;
  return static_cast<int>(it - h.begin());
}

// log2 of the loss scale; 0 (no shift) when the log holds no usable scale ("inf", "nan", 0).
double log2_scale(const GradHist& h) {
  return h.scale > 0 && std::isfinite(h.scale) ? std::log2(h.scale) : 0.0;
}

// ---- pickers ----------------------------------------------------------------------------

bool draw_pickers(App& app, int& run_index, const std::vector<GradHist>*& hists, int& index) {
  draw_budget_line(app);
  GradientsState& g = app.grads;
  std::vector<int> with_grads;
  for (size_t i = 0; i < app.runs.size(); ++i)
    if (!app.runs[i].data().grads.empty()) with_grads.push_back(static_cast<int>(i));
  if (!app.has_run(g.run)) {  // none picked: the first run read that has histograms
    if (with_grads.empty()) {
      ImGui::TextWrapped("No run with gradient histograms (grad_hist events) yet. Open a run "
                         "folder, or make synthetic demo runs with --make-demo-runs runs/.");
      for (const RunSlot& r : app.runs) run_problems_lines(r.data());  // perhaps why
      return false;
    }
    g.run = with_grads[0];
  }
  run_index = g.run;
  const RunData& run = app.runs[run_index].data();
  const float fs = ImGui::GetFontSize();

  ImGui::SetNextItemWidth(fs * 13);
  if (ImGui::BeginCombo("run", run.name.c_str())) {
    for (int i : with_grads)
      if (ImGui::Selectable(app.runs[i].data().name.c_str(), i == g.run)) g.run = i;
    ImGui::EndCombo();
  }
  help_marker("A run folder with grad_hist events (docs/run-log.md). Runs are listed in the "
              "Runs panel.");
  if (run.grads.empty()) {  // the run picked stays picked: the panel says what it lacks
    ImGui::TextWrapped("%s: no gradient histograms (grad_hist events)%s.", run.name.c_str(),
                       app.reading(g.run));
    run_problems_lines(run);
    return false;
  }
  if (param_hists(run, g.param) == nullptr) g.param = run.params.front();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(fs * 11);
  if (ImGui::BeginCombo("parameter", g.param.c_str())) {
    for (const auto& p : run.params)
      if (ImGui::Selectable(p.c_str(), p == g.param)) g.param = p;
    ImGui::EndCombo();
  }
  help_marker("One parameter tensor (a layer's weight or bias): its gradient is what the "
              "histogram shows.");
  hists = param_hists(run, g.param);
  index = nearest_index(*hists, g.step);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(fs * 14);
  int last = static_cast<int>(hists->size()) - 1;
  if (ImGui::SliderInt("##step", &index, 0, last, fmt::format("step {}", (*hists)[index].step).c_str()))
    g.step = (*hists)[index].step;
  help_marker("The training step (histograms are logged every few steps). Also: click the heat "
              "map below.");
  // The two checkboxes go on the same row when it has room (a narrow window wraps them).
  const float need = fs * 18;
  if (ImGui::GetContentRegionAvail().x - ImGui::GetItemRectMax().x + ImGui::GetCursorScreenPos().x > need)
    ImGui::SameLine();
  ImGui::Checkbox("log counts", &g.log_counts);
  help_marker("Bar height log10(1 + count): small groups of values (the ones FP16 loses) stay "
              "visible next to big ones.");
  ImGui::SameLine();
  ImGui::Checkbox("true gradient", &g.show_true);
  help_marker("With a loss scale the backward pass computes scale x gradient, so the values "
              "FP16 holds are shifted right by log2(scale) binades. Ticked: also draw the true "
              "gradient (÷ scale) in blue.");
  ImGui::SameLine();
  ImGui::Checkbox("heat map: true gradient", &g.heat_true);
  help_marker("The heat map shows one thing at a time. Unticked: the gradient as computed "
              "(x scale), against FP16's fixed limits. Ticked: the true gradient (÷ scale); "
              "FP16's limits then move with the scale (2^-24 ÷ scale ...), drawn as steps.");
  synthetic_banner(run);
  run_problems_lines(run);
  return true;
}

// ---- histogram --------------------------------------------------------------------------

void draw_histogram(const GradientsState& g, const GradHist& h, ImVec2 size) {
  const double s = scale_shift(h);
  const bool scaled = s != 0;
  const double xlo = h.exp_min - 1 - (scaled && g.show_true ? std::max(0.0, s) : 0);
  const double xhi = h.exp_max + 3.6 + (scaled && g.show_true ? std::max(0.0, -s) : 0);
  auto y_of = [&](int64_t c) { return g.log_counts ? std::log10(1.0 + c) : double(c); };
  double ymax = y_of(std::max(h.below, h.above));
  for (auto c : h.counts) ymax = std::max(ymax, y_of(c));
  const char* ytitle = g.log_counts ? "log10(1 + count)" : "count";
  // An all-inf/NaN step has no bar: keep a readable count axis (0..1) rather than 0..1e-9.
  PlotFrame f = begin_plot("hist", size, xlo, xhi, 0, std::max(ymax * 1.08, 1.0), "floor(log2 |g|)",
                           ytitle, pow2_label, nullptr, 4, 0);
  const bool hovered = ImGui::IsItemHovered();
  shade_zones_x(f, h.dtype);
  auto bar = [&](double x, int64_t c, ImU32 fill, bool outline) {
    if (c <= 0) return;
    ImVec2 a = f.map(x + 0.1, y_of(c)), b = f.map(x + 0.9, 0);
    if (outline) f.dl->AddRect(a, b, fill, 0, 0, 1.5f);
    else f.dl->AddRectFilled(a, b, fill);
  };
  const ImU32 held = IM_COL32(250, 170, 60, 230), truth = IM_COL32(110, 180, 255, 255);
  for (size_t i = 0; i < h.counts.size(); ++i) bar(h.exp_min + double(i), h.counts[i], held, false);
  bar(h.exp_min - 1, h.below, IM_COL32(250, 170, 60, 120), false);
  bar(h.exp_max + 1, h.above, IM_COL32(250, 170, 60, 120), false);
  if (scaled && g.show_true)
    for (size_t i = 0; i < h.counts.size(); ++i) bar(h.exp_min + double(i) - s, h.counts[i], truth, true);
  if (hovered) {  // the bin under the mouse
    const int e = static_cast<int>(std::floor(f.x_at(ImGui::GetIO().MousePos.x)));
    auto count_at = [&](int bin) -> int64_t {
      if (bin < h.exp_min) return bin == h.exp_min - 1 ? h.below : 0;
      if (bin > h.exp_max) return bin == h.exp_max + 1 ? h.above : 0;
      return h.counts[bin - h.exp_min];
    };
    const Fp16Zones z = fp16_zones();
    const char* zone = e < z.e_sub ? "FP16 rounds these to 0 or 2^-24" : e < z.e_norm ? "FP16 subnormal"
                     : e < z.e_max ? "FP16 normal"
                     : e == z.e_max ? "FP16 normal up to 65504; above 65504 it overflows to inf"
                                    : "FP16 overflow (inf)";
    f.dl->AddRectFilled(f.map(e, f.y1), f.map(e + 1, f.y0), IM_COL32(255, 255, 255, 30));
    ImGui::BeginTooltip();
    ImGui::Text("2^%d <= |g| < 2^%d  (%s)", e, e + 1, zone);
    if (e < z.e_sub && h.dtype == GradDtype::F16)
      ImGui::TextUnformatted("These are F16 values: none can lie here. One that underflowed "
                             "is already 0,\ncounted among the zeros in the line above.");
    ImGui::Text("values here as computed: %lld", static_cast<long long>(count_at(e)));
    if (e == z.e_max)
      ImGui::TextUnformatted("This bin is split (hatched): FP16's largest finite value, 65504, "
                             "lies inside it.\nA log2 histogram cannot tell which of these values "
                             "are above 65504;\nthe fp16_overflow count in the summary line can.");
    if (scaled)
      ImGui::Text("true gradient values here: %lld", static_cast<long long>(count_at(e + static_cast<int>(s))));
    ImGui::EndTooltip();
  }
  end_plot(f);
  // The legend goes on the title row, right-aligned, so it never covers a bar.
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float fs = ImGui::GetFontSize();
  const ImU32 text = IM_COL32(230, 230, 230, 255);
  struct Item { int kind; const char* label; };  // 0 filled, 1 outline, 2 hatched
  std::vector<Item> items = {{0, scaled ? "as computed: x scale (what FP16 holds)" : "gradient (no loss scale)"}};
  if (scaled && g.show_true) items.push_back({1, "true gradient (÷ scale)"});
  items.push_back({2, "2^15..2^16: inf above 65504"});
  float w = 0;
  for (const Item& it : items) w += fs * 1.2f + ImGui::CalcTextSize(it.label).x + fs;
  // right-aligned, but never over the axis title on the left of the same row
  ImVec2 l = {std::max(f.p1.x - w, f.p0.x - fs * 3.6f + ImGui::CalcTextSize(ytitle).x + fs),
              f.p0.y - fs * 1.15f};
  for (const Item& it : items) {
    const ImVec2 b = {l.x + fs * 0.8f, l.y + fs * 0.8f};
    if (it.kind == 0) dl->AddRectFilled(l, b, held);
    if (it.kind == 1) dl->AddRect(l, b, truth, 0, 0, 1.5f);
    if (it.kind == 2) {
      dl->AddRectFilled(l, b, IM_COL32(80, 200, 120, 30));
      PlotFrame swatch = f;  // the plot's own hatching, on a small square
      swatch.dl = dl, swatch.x0 = 0, swatch.x1 = 1, swatch.p0 = l, swatch.p1 = b;
      hatch_bin(swatch, 0);
    }
    dl->AddText({l.x + fs * 1.2f, l.y - fs * 0.1f}, text, it.label);
    l.x += fs * 1.2f + ImGui::CalcTextSize(it.label).x + fs;
  }
  // A step whose gradient overflowed holds inf/NaN, which no bin counts: say so on the plot.
  if (h.inf + h.nan > 0) {
    std::string note = fmt::format("{} inf and {} NaN of {} values are in no bin: this gradient "
                                   "overflowed (a loss scaler skips this step)",
                                   h.inf, h.nan, h.total);
    ImVec2 ts = ImGui::CalcTextSize(note.c_str());
    ImVec2 a = {f.p0.x + (f.p1.x - f.p0.x - ts.x) * 0.5f, f.p0.y + (f.p1.y - f.p0.y) * 0.45f};
    dl->AddRectFilled({a.x - 6, a.y - 4}, {a.x + ts.x + 6, a.y + ts.y + 4}, IM_COL32(60, 10, 10, 230), 4);
    dl->AddText(a, IM_COL32(255, 140, 130, 255), note.c_str());
  }
}

void draw_summary(const GradHist& h) {
  ImGui::TextWrapped("%s", grad_summary(h).c_str());
  help_marker("Out of all the elements of this gradient, in the format backward held them in: "
              "exact zeros; values below FP16's smallest subnormal 2^-24 (FP16 rounds them to 0 "
              "at most 2^-25, else up to 2^-24: that part of the gradient is lost); subnormals "
              "2^-24..2^-14 (kept, with fewer bits); above 65504 (become inf, and a loss scaler "
              "skips the step). F16 values cannot lie below 2^-24 or above 65504: backward "
              "already made those 0 or inf, so they are counted among the zeros and the infs. "
              "Counts are of the scaled values, which is what the format actually holds.");
  if (h.lost_update_fraction >= 0) {
    ImGui::SameLine();
    ImGui::Text("  updates lost: %.1f%%", 100 * h.lost_update_fraction);
    help_marker("Share of weights whose update lr x step is below half an ULP of the weight in "
                "its storage format: the addition rounds it away (chapter 06). F32 master "
                "weights (chapter 07) fix this.");
  }
}

// ---- heat map ---------------------------------------------------------------------------

struct HeatTexture {
  GLuint tex = 0;
  const RunData* run = nullptr;
  std::string param;
  uint64_t version = ~0ull;
  bool unscaled = false;
  int e_lo = 0, e_hi = 0;  // exponent of the bottom and the top row
};

// Builds (or reuses) a texture: one column per logged step (neighbouring steps share one
// beyond 2048 of them: GL textures have a size limit, and a screen has fewer columns), one row
// per exponent bin. The cells come from heat_grid (plot_math.h), which bounds every index.
const HeatTexture& heat_texture(const RunData& run, uint64_t version, const std::string& param,
                                const std::vector<GradHist>& hs, bool unscaled) {
  static HeatTexture t;
  if (t.tex && t.run == &run && t.param == param && t.version == version && t.unscaled == unscaled)
    return t;
  const HeatGrid g = heat_grid(hs, unscaled, /*max_cols=*/2048);
  std::vector<ImU32> px(g.t.size());
  for (size_t i = 0; i < px.size(); ++i) px[i] = heat_color(g.t[i]);
  if (!t.tex) glGenTextures(1, &t.tex);
  glBindTexture(GL_TEXTURE_2D, t.tex);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, g.cols, g.rows, 0, GL_RGBA, GL_UNSIGNED_BYTE, px.data());
  t.run = &run, t.param = param, t.version = version, t.unscaled = unscaled;
  t.e_lo = g.e_lo, t.e_hi = g.e_hi;
  return t;
}

void draw_heat_map(App& app, const RunSlot& slot, const std::vector<GradHist>& hs, int index,
                   ImVec2 size) {
  GradientsState& g = app.grads;
  // Scaled (default): the values as computed (x scale), what FP16 holds, so FP16's limits are
  // fixed lines; a dynamic scale shows as the band jumping when the scale changes.
  // True (÷ scale): the band moves only as training moves it, and FP16's limits move instead.
  const bool tru = g.heat_true;
  const HeatTexture& t = heat_texture(slot.data(), slot.reader->version(), g.param, hs, tru);
  const int64_t s0 = hs.front().step, s1 = hs.back().step;
  const double dx = hs.size() > 1 ? double(s1 - s0) / (hs.size() - 1) : 1.0;
  PlotFrame f = begin_plot("heat", size, s0, s1 + dx, t.e_lo, t.e_hi + 1, "step",
                           tru ? "heat map over steps: log2 |g| of the TRUE gradient (÷ loss "
                                 "scale); lines: FP16's limits ÷ scale; red: inf/NaN"
                               : "heat map over steps: log2 |g| as computed (x loss scale, what "
                                 "FP16 holds); colour: count; red: inf/NaN",
                           step_label, pow2_label, 0, size.y > ImGui::GetFontSize() * 10 ? 8 : 16);
  if (ImGui::IsItemActive() && ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
    double step = f.x_at(ImGui::GetIO().MousePos.x);
    g.step = hs[nearest_index(hs, static_cast<int64_t>(step))].step;
  }
  if (ImGui::IsItemHovered()) {  // the cell under the mouse
    const ImVec2 m = ImGui::GetIO().MousePos;
    const GradHist& h = hs[nearest_index(hs, static_cast<int64_t>(f.x_at(m.x)))];
    const int e = static_cast<int>(std::floor(f.y_at(m.y)));
    const int held = e + (tru ? scale_shift(h) : 0);  // bin in the log
    const int64_t c = held >= h.exp_min && held <= h.exp_max ? h.counts[held - h.exp_min] : 0;
    ImGui::SetTooltip("step %lld, loss scale 2^%g\n2^%d <= |g|%s < 2^%d: %lld values (click: show this step)%s",
                      static_cast<long long>(h.step), log2_scale(h), e, tru ? " (true)" : "", e + 1,
                      static_cast<long long>(c),
                      h.inf + h.nan > 0 ? "\nred: this gradient overflowed (inf/NaN, in no bin)" : "");
  }
  f.dl->AddImage(reinterpret_cast<ImTextureID>(static_cast<intptr_t>(t.tex)), f.p0, f.p1);
  // Steps whose gradient overflowed hold inf/NaN, which no bin counts: a red column, not a
  // silent gap (a loss scaler skipped these steps).
  for (const GradHist& h : hs) {
    if (h.inf + h.nan == 0) continue;
    const float xa = f.px(double(h.step)), xb = std::max(xa + 2.0f, f.px(h.step + dx));
    f.dl->AddRectFilled({xa, f.p0.y}, {xb, f.p1.y}, IM_COL32(230, 60, 50, 110));
    const float xm = (xa + xb) * 0.5f;
    f.dl->AddTriangleFilled({xm, f.p0.y + 9}, {xm - 4, f.p0.y + 1}, {xm + 4, f.p0.y + 1},
                            IM_COL32(255, 70, 60, 255));
  }
  const Fp16Zones z = fp16_zones();
  // FP16's limits as lines, each labelled at the right on a dark box (below the top one).
  auto hline = [&](double e, ImU32 c, const char* label, bool below) {
    float y = f.py(e), fs = ImGui::GetFontSize();
    f.dl->AddLine({f.p0.x, y}, {f.p1.x, y}, c, 1.5f);
    ImVec2 ts = ImGui::CalcTextSize(label);
    ImVec2 a(f.p1.x - ts.x - 8, below ? y + 2 : y - fs - 3);
    f.dl->AddRectFilled(a, {a.x + ts.x + 6, a.y + ts.y + 1}, IM_COL32(10, 10, 14, 200), 3);
    f.dl->AddText({a.x + 3, a.y}, c, label);
  };
  // With the true gradient FP16's limits are divided by each step's scale: a staircase.
  auto stairs = [&](double e, ImU32 c, const char* label, bool below) {
    std::vector<ImVec2> pts;
    double prev = NAN;
    for (size_t k = 0; k < hs.size(); ++k) {
      double y = e - scale_shift(hs[k]);
      double x = double(hs[k].step);
      if (y != prev) {
        if (!pts.empty()) pts.push_back(f.map(x, prev));
        pts.push_back(f.map(x, y));
        prev = y;
      }
    }
    pts.push_back(f.map(s1 + dx, prev));
    f.dl->AddPolyline(pts.data(), static_cast<int>(pts.size()), c, 0, 1.5f);
    float y = pts.back().y, fs = ImGui::GetFontSize();
    ImVec2 ts = ImGui::CalcTextSize(label);
    ImVec2 a(f.p1.x - ts.x - 8, below ? y + 2 : y - fs - 3);
    f.dl->AddRectFilled(a, {a.x + ts.x + 6, a.y + ts.y + 1}, IM_COL32(10, 10, 14, 200), 3);
    f.dl->AddText({a.x + 3, a.y}, c, label);
  };
  if (tru) {
    stairs(z.e_sub, IM_COL32(220, 220, 230, 255), "2^-24 ÷ scale: smaller true gradients are lost", false);
    stairs(z.e_norm, IM_COL32(130, 190, 250, 255), "2^-14 ÷ scale: FP16 normal from here up", false);
    stairs(z.e_max + 1, IM_COL32(250, 100, 90, 255), "65504 ÷ scale: overflows above", true);
  } else {
    hline(z.e_sub, IM_COL32(220, 220, 230, 255), "2^-24: F16 rounds half of it (2^-25) and less to 0", false);
    hline(z.e_norm, IM_COL32(130, 190, 250, 255), "2^-14: FP16 normal from here up", false);
    hline(z.e_max + 1, IM_COL32(250, 100, 90, 255), "2^16 > 65504: FP16 overflows above", true);
  }
  float x = f.px(hs[index].step + 0.5 * dx);
  f.dl->AddLine({x, f.p0.y}, {x, f.p1.y}, IM_COL32(255, 255, 255, 200), 1.5f);
  end_plot(f);
  help_marker("Every logged step of this parameter at once: x is the step, y the binary "
              "exponent floor(log2|g|), brightness the number of values (log scale). Watch the "
              "band sink as training converges, and, with a dynamic loss scale, jump when the "
              "scale changes (tick 'heat map: true gradient' above to see the gradient itself, "
              "with FP16's limits moving instead). Click to pick a step.");
}

// ---- per layer over time ----------------------------------------------------------------

// The range of every parameter's series, cached: it changes only when the run grows (its
// reader's version), so most frames skip the loop over all histograms (100,000 of them in a
// large run).
const PerLayerRange& per_layer_range_cached(const RunData& run, uint64_t version) {
  static const RunData* cached_run = nullptr;
  static uint64_t cached_version = ~0ull;
  static PerLayerRange r;
  if (cached_run == &run && cached_version == version) return r;
  r = per_layer_range(run);
  cached_run = &run, cached_version = version;
  return r;
}

void draw_underflow(App& app, const RunSlot& slot, ImVec2 size) {
  GradientsState& g = app.grads;
  const RunData& run = slot.data();
  const PerLayerRange& range = per_layer_range_cached(run, slot.reader->version());
  // The series picked stays picked; a run that cannot show it shows what holds the answer
  // (an F16 run's zeros for its underflow).
  const PerLayer shown = per_layer_shown(PerLayer(std::clamp(g.per_layer, 0, kPerLayerSeries - 1)), range);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 19);
  if (ImGui::BeginCombo("per layer, over time", per_layer_label(shown))) {
    for (PerLayer s : {PerLayer::Underflow, PerLayer::Zeros, PerLayer::Subnormal, PerLayer::LostUpdates}) {
      if (s == PerLayer::LostUpdates && !range.has_lost) continue;
      if (ImGui::Selectable(per_layer_label(s), s == shown)) g.per_layer = int(s);
    }
    ImGui::EndCombo();
  }
  const double ymax = range.ymax[int(shown)], xmax = range.xmax;
  help_marker("One line per parameter; the selected one is white. Below 2^-24: the share of the "
              "gradient's elements below 2^-24 once scaled, which FP16 turns into zeros; a loss "
              "scale lifts them back into range. F16 gradients hold none (what underflowed is "
              "already 0), so for them the plot shows the exact zeros, underflows included. "
              "Updates lost: lost_update_fraction from the log (chapter 06). Subnormal: kept, "
              "but with fewer significant bits.");
  size.y -= ImGui::GetFrameHeightWithSpacing();
  PlotFrame f = begin_plot("underflow", size, 0, xmax, 0, std::max(1.0, ymax * 1.1), "step",
                           nullptr, step_label);
  // Many parameters: the others get fewer points and plain (not anti-aliased) lines, so 50
  // layers cost about what 5 do.
  const bool many = run.params.size() > 12;
  const int max_pts = std::max(16, static_cast<int>((f.p1.x - f.p0.x) / (many ? 6 : 2)));
  const ImDrawListFlags saved = f.dl->Flags;
  if (many) f.dl->Flags &= ~ImDrawListFlags_AntiAliasedLines;
  // A point without a value (an F16 histogram's underflow, a step with no lost updates
  // logged) leaves a gap in its line.
  std::vector<ImVec2> pts;
  auto draw_series = [&](const std::vector<GradHist>& hs, ImU32 c, float thickness) {
    pts.clear();
    const size_t stride = std::max<size_t>(1, hs.size() / max_pts);
    for (size_t k = 0; k < hs.size(); k += stride) {
      const double v = per_layer_value(hs[k], shown);
      if (std::isnan(v)) {
        draw_polyline(f.dl, pts, c, thickness);
        pts.clear();
      } else {
        pts.push_back(f.map(double(hs[k].step), v));
      }
    }
    draw_polyline(f.dl, pts, c, thickness);
  };
  int i = 0;
  for (const auto& name : run.params) {
    const ImU32 c = (run_color(i + 1) & 0x00FFFFFF) | (110u << 24);
    if (name != g.param) draw_series(run.grads.at(name), c, 1.0f);
    ++i;
  }
  f.dl->Flags = saved;
  // the selected one last, on top
  if (auto it = run.grads.find(g.param); it != run.grads.end()) {
    draw_series(it->second, IM_COL32(255, 255, 255, 255), 2.5f);
    const std::string t = fmt::format("white: {} ({} parameters in all)", g.param, run.params.size());
    const ImVec2 ts = ImGui::CalcTextSize(t.c_str()), at = {f.p0.x + 6, f.p0.y + 4};
    f.dl->AddRectFilled({at.x - 3, at.y - 1}, {at.x + ts.x + 3, at.y + ts.y + 1}, IM_COL32(10, 10, 14, 215), 3);
    f.dl->AddText(at, IM_COL32(255, 255, 255, 255), t.c_str());
  }
  const std::string note = per_layer_note(shown, range);
  if (!note.empty()) {  // under the white label, on a dark box so a line never hides it
    const ImVec2 ts = ImGui::CalcTextSize(note.c_str()), at = {f.p0.x + 6, f.p0.y + ImGui::GetFontSize() * 1.4f};
    f.dl->AddRectFilled({at.x - 3, at.y - 1}, {at.x + ts.x + 3, at.y + ts.y + 1}, IM_COL32(10, 10, 14, 215), 3);
    f.dl->AddText(at, ymax == 0 ? IM_COL32(160, 220, 160, 255) : IM_COL32(250, 200, 120, 255), note.c_str());
  }
  end_plot(f);
}

}  // namespace

void draw_gradients_panel(App& app) {
  int run_index = -1, index = 0;
  const std::vector<GradHist>* hs = nullptr;
  if (!draw_pickers(app, run_index, hs, index)) return;
  const RunSlot& slot = app.runs[run_index];
  const GradHist& h = (*hs)[index];
  draw_summary(h);
  ImVec2 avail = ImGui::GetContentRegionAvail();
  float gap = ImGui::GetStyle().ItemSpacing.y;
  draw_histogram(app.grads, h, ImVec2(avail.x, avail.y * 0.40f - gap));
  draw_heat_map(app, slot, *hs, index, ImVec2(avail.x - ImGui::GetFontSize() * 2, avail.y * 0.30f - gap));
  draw_underflow(app, slot, ImVec2(avail.x, avail.y * 0.30f - gap));
}

}  // namespace hg::viewer
