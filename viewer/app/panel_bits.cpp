// The Bits panel: one number in FP32, TF32, FP16, BF16, FP8 E4M3 and FP8 E5M2.
//
// Sections (grep for "----"):
//   input        a decimal number, 2^N, or hex bits; quick values
//   formats      a row per format: coloured bit boxes (click to flip), stored value, error
//   details      every field of framework/dtype's Decomposed for the focused format
//   number line  each format's ranges on a log2 axis, with the number marked
//
// Every number shown comes from hg::decompose / hg::decompose_bits (framework/dtype): the
// viewer holds no copy of the formats' rules. Chapter 04 explains what is shown here.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <imgui.h>
#include <imgui_stdlib.h>

#include "viewer/app/app.h"
#include "viewer/app/bit_colors.h"
#include "viewer/app/widgets.h"

namespace hg::viewer {

namespace {

constexpr const char* kChapter = "Chapter 04 (lessons/04_number_formats/README.md) explains this.";

ImU32 col(Rgb c) { return IM_COL32(c.r, c.g, c.b, 255); }

// Shortest text that reads back as the same double (fmt's "{}"), or inf/NaN.
std::string num(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return fmt::format("{}", v);
}

std::string hex_bits(uint64_t bits, const FloatFormat& f) {
  return fmt::format("0x{:0{}X}", bits, (f.total_bits() + 3) / 4);
}

// The decomposition of the current number in format f: from the bits when the user set
// them in this format (typed hex, or clicked a bit), else by rounding the number into f.
Decomposed current(const BitsState& s, const FloatFormat& f) {
  if (s.bits_of == &f) return decompose_bits(s.bits, f);
  return decompose(s.value, f);
}

// ---- input ----------------------------------------------------------------------------

// "0.1", "-3e-8", "inf", "nan", "2^-24", "-2^10" are numbers; "0x3C00" is bits of `f`.
bool parse_input(BitsState& s, const FloatFormat& f) {
  std::string t = s.text;
  t.erase(0, t.find_first_not_of(" \t"));
  t.erase(t.find_last_not_of(" \t") + 1);
  if (t.empty()) {
    s.error = "type a number";
    return false;
  }
  bool hex = t.size() > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') &&
             t.find_first_of("pP.") == std::string::npos;
  char* end = nullptr;
  if (hex) {
    uint64_t bits = std::strtoull(t.c_str() + 2, &end, 16);
    if (*end != '\0') {
      s.error = "not hex digits: " + t;
      return false;
    }
    if (f.total_bits() < 64 && (bits >> f.total_bits()) != 0) {
      s.error = fmt::format("{} has {} bits: {} does not fit", f.name, f.total_bits(), t);
      return false;
    }
    s.bits_of = &f;
    s.focus = &f;
    s.bits = bits;
    s.value = decode(bits, f);
    s.error.clear();
    return true;
  }
  double v;
  if (auto caret = t.find("^"); caret != std::string::npos && (t.rfind("2^", 0) == 0 || t.rfind("-2^", 0) == 0)) {
    long e = std::strtol(t.c_str() + caret + 1, &end, 10);
    v = std::ldexp(t[0] == '-' ? -1.0 : 1.0, static_cast<int>(e));
  } else {
    v = std::strtod(t.c_str(), &end);
  }
  if (end == t.c_str() || *end != '\0') {
    s.error = "not a number: '" + t + "' (try 0.1, 1e-8, 2^-24, inf, or hex bits like 0x3C00)";
    return false;
  }
  s.value = v;
  s.bits_of = nullptr;
  s.error.clear();
  return true;
}

void draw_input(App& app, const FloatFormat& hex_format) {
  BitsState& s = app.bits;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 14);
  if (ImGui::InputText("number", &s.text)) parse_input(s, hex_format);
  help_marker(
      "Type a decimal number (0.1, -3e-8, 65504, inf, nan), a power of two (2^-24), or the bits "
      "in hex (0x3C00). Hex is read as the bits of the highlighted format (click a format's "
      "name to choose it). Every format below then rounds the same number to nearest, ties to "
      "even.");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 9);
  const char* shown = s.only ? s.only->name : "all formats";
  if (ImGui::BeginCombo("show", shown)) {
    if (ImGui::Selectable("all formats", s.only == nullptr)) s.only = nullptr;
    for (const FloatFormat* f : all_formats())
      if (ImGui::Selectable(f->name, s.only == f)) s.only = f;
    ImGui::EndCombo();
  }
  help_marker("One format at a time (bigger boxes) or all six one under another.");
  if (!s.error.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", s.error.c_str());
  }
  ImGui::TextDisabled("try:");
  const char* quick[] = {"1", "0.1", "3.14159265", "65504", "70000", "2^-24", "1e-8", "-0", "inf", "nan"};
  for (const char* q : quick) {
    ImGui::SameLine();
    if (ImGui::SmallButton(q)) {
      s.text = q;
      parse_input(s, hex_format);
    }
  }
  help_marker(
      "65504 is FP16's largest finite number; 70000 overflows FP16 but not BF16; 2^-24 is "
      "FP16's smallest subnormal; 1e-8 underflows FP16 to zero but BF16 keeps it.");
}

// ---- formats: the bit boxes -----------------------------------------------------------

// Draws the boxes of `d` left to right, most significant bit first; a click flips a bit.
void draw_bit_boxes(App& app, const Decomposed& d, float box) {
  const FloatFormat& f = *d.format;
  const int n = f.total_bits();
  const float gap = box * 0.25f;  // between sign | exponent | mantissa
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImVec2 p = ImGui::GetCursorScreenPos();
  float x = p.x;
  for (int i = n - 1; i >= 0; --i) {
    const bool is_sign = i == n - 1, is_exp = !is_sign && i >= f.mantissa_bits;
    if (i == n - 2 || i == f.mantissa_bits - 1) x += gap;
    const int bit = static_cast<int>((d.bits >> i) & 1u);
    Rgb c = is_sign ? (bit ? kSignOn : kSignOff)
                    : is_exp ? (bit ? kExponentOn : kExponentOff) : (bit ? kMantissaOn : kMantissaOff);
    ImVec2 a(x, p.y), b(x + box - 2, p.y + box);
    ImGui::SetCursorScreenPos(a);
    ImGui::PushID(i);
    if (ImGui::InvisibleButton("bit", ImVec2(box - 2, box))) {
      app.bits.bits_of = &f;
      app.bits.focus = &f;
      app.bits.bits = d.bits ^ (uint64_t{1} << i);
      app.bits.value = decode(app.bits.bits, f);
      app.bits.text = hex_bits(app.bits.bits, f);
      app.bits.error.clear();
    }
    const bool hovered = ImGui::IsItemHovered();
    if (hovered)
      ImGui::SetTooltip("bit %d (%s): click to flip", i,
                        is_sign ? "sign" : is_exp ? "exponent" : "mantissa");
    ImGui::PopID();
    dl->AddRectFilled(a, b, col(c), box * 0.12f);
    if (hovered) dl->AddRect(a, b, IM_COL32(255, 255, 255, 220), box * 0.12f, 0, 2.0f);
    const char* digit = bit ? "1" : "0";
    ImVec2 ts = ImGui::CalcTextSize(digit);
    dl->AddText({a.x + (box - 2 - ts.x) * 0.5f, a.y + (box - ts.y) * 0.5f},
                bit ? IM_COL32(15, 15, 20, 255) : IM_COL32(200, 200, 200, 255), digit);
    if (app.bit_boxes)
      app.bit_boxes->push_back({f.id, i, is_sign ? "sign" : is_exp ? "exponent" : "mantissa",
                                bit, a, b});
    x += box;
  }
  ImGui::SetCursorScreenPos(p);
  ImGui::Dummy(ImVec2(x - p.x, box));
}

void draw_format_table(App& app) {
  BitsState& s = app.bits;
  const FloatFormat*& focus = s.focus;
  const float fs = ImGui::GetFontSize();
  const float avail = ImGui::GetContentRegionAvail().x;
  // One format: its boxes get a row of their own, big. All formats: the boxes sit in the
  // table, sized so FP32's 32 bits still leave room for the other columns.
  float box;
  ImGui::TextDisabled("red: sign   blue: exponent   green: mantissa   bright: 1   (click a box to "
                      "flip its bit)");
  help_marker("Red: the sign bit. Blue: the exponent field. Green: the mantissa (fraction) "
              "field. A bright box is a 1. Clicking a box flips that bit, and every other "
              "format then shows the number the new bits hold. Chapter 04 walks through the "
              "fields of each format.");
  if (s.only) {
    box = std::min(fs * 2.2f, avail / (s.only->total_bits() + 1.0f));
    draw_bit_boxes(app, current(s, *s.only), box);
  } else {
    box = std::clamp((avail - fs * 30) / 33.0f, fs * 0.8f, fs * 1.35f);
  }
  ImGuiTableFlags flags = ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_RowBg |
                          ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_PadOuterX;
  if (!ImGui::BeginTable("formats", s.only ? 4 : 5, flags)) return;
  ImGui::TableSetupColumn("format");
  if (!s.only) ImGui::TableSetupColumn("sign | exponent | mantissa");
  ImGui::TableSetupColumn("stored value");
  ImGui::TableSetupColumn("rounding error");
  ImGui::TableSetupColumn("class");
  ImGui::TableHeadersRow();
  for (const FloatFormat* f : all_formats()) {
    if (s.only && s.only != f) continue;
    Decomposed d = current(s, *f);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (ImGui::Selectable(f->name, focus == f, 0, ImVec2(fs * 5.5f, 0))) focus = f;
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s: 1 sign + %d exponent + %d mantissa bits, bias %d.\nClick to show "
                        "all its fields below (and to read hex input as its bits).",
                        f->name, f->exponent_bits, f->mantissa_bits, f->bias);
    ImGui::TextDisabled("%s", hex_bits(d.bits, *f).c_str());
    if (!s.only) {
      ImGui::TableNextColumn();
      draw_bit_boxes(app, d, box);
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(num(d.value).c_str());
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("exactly %s", d.exact_decimal.c_str());
    ImGui::TableNextColumn();
    if (s.bits_of == f) ImGui::TextDisabled("(bits set directly)");
    else if (std::isfinite(d.error_ulps)) ImGui::Text("%.3g ULP  (rel %.2g)", d.error_ulps, d.rel_error);
    else ImGui::TextDisabled("-");
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(to_string(d.cls));
  }
  ImGui::EndTable();
}

// ---- details of the focused format ----------------------------------------------------

void field(const char* label, const std::string& value, const char* help) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(label);
  help_marker(help);
  ImGui::TableNextColumn();
  ImGui::TextWrapped("%s", value.c_str());
}

void draw_details(const BitsState& s, const FloatFormat& f) {
  Decomposed d = current(s, f);
  ImGui::Text("%s in detail", f.name);
  help_marker(
      "All of these come from hg::decompose() in framework/dtype/float_format.h, the same code "
      "the training programs use. Chapter 04 (lessons/04_number_formats/README.md) derives "
      "each one.");
  if (!ImGui::BeginTable("details", 2, ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingStretchProp))
    return;
  ImGui::TableSetupColumn("field", ImGuiTableColumnFlags_WidthFixed, ImGui::GetFontSize() * 13);
  ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthStretch);
  const int m = f.mantissa_bits;
  std::string formula;
  if (d.cls == FloatClass::Normal)
    formula = fmt::format("(-1)^{} x 2^({} - {}) x (1 + {}/2^{})", d.sign, d.exponent_field, f.bias,
                          d.mantissa_field, m);
  else if (d.cls == FloatClass::Subnormal || d.cls == FloatClass::Zero)
    formula = fmt::format("(-1)^{} x 2^({}) x (0 + {}/2^{})   exponent field 0: no hidden 1",
                          d.sign, f.min_exponent(), d.mantissa_field, m);
  else
    formula = d.cls == FloatClass::Inf ? "exponent all ones, mantissa 0: infinity"
                                       : "a NaN pattern: not a number";
  field("fields", fmt::format("sign {}   exponent {} (0b{:0{}b})   mantissa {} (0b{:0{}b})", d.sign,
                              d.exponent_field, d.exponent_field, f.exponent_bits, d.mantissa_field,
                              d.mantissa_field, m),
        "The three fields read as unsigned integers. The sign bit is the top bit; then the "
        "exponent field; then the mantissa (the fraction bits).");
  field("value =", formula,
        "A normal number is (-1)^sign x 2^(exponent - bias) x 1.mantissa. When the exponent "
        "field is 0 the number is subnormal: the hidden leading 1 becomes 0 and the exponent "
        "stays at its minimum, so precision fades gradually towards zero.");
  field("stored value (exact)", d.exact_decimal,
        "The number the bits hold, written out exactly in decimal (every binary fraction has a "
        "finite decimal expansion). This is what the hardware computes with.");
  const bool direct = s.bits_of == &f;
  field("you asked for", direct ? "these bits (typed in hex or flipped): nothing was rounded" : num(d.input),
        "The number you typed (as a double). It is rounded to the nearest value the format "
        "holds, ties to even.");
  field("rounding error",
        direct ? std::string("none: the bits were set directly")
               : fmt::format("abs {}   rel {:.3g}   {:.4g} ULP", num(d.abs_error), d.rel_error,
                             d.error_ulps),
        "stored - asked: absolute, relative to the asked value, and in units of the last place. "
        "Round to nearest keeps it within half an ULP (0.5) for numbers in range.");
  field("class", to_string(d.cls),
        "zero, subnormal (exponent field 0, mantissa not 0), normal, infinity or NaN. FP8 E4M3 "
        "has no infinity: its overflow saturates or becomes NaN.");
  field("unbiased exponent", fmt::format("{}   (field {} - bias {})", d.unbiased_exponent,
                                         d.exponent_field, f.bias),
        "The power of two the stored value is scaled by. Subnormals use the minimum exponent "
        "1 - bias.");
  field("ULP here", num(d.ulp),
        "Unit in the last place: the gap between this number and the next one of the same "
        "exponent, 2^(exponent - mantissa bits). It doubles with every binade.");
  field("next up / next down", num(d.next_up) + "   /   " + num(d.next_down),
        "The neighbouring representable values: nothing in between can be stored.");
  field("format range", fmt::format("max {}   min normal {}   min subnormal {}   epsilon {}",
                                    num(f.max_finite()), num(f.min_normal()),
                                    num(f.min_subnormal()), num(f.epsilon())),
        "Largest finite value, smallest normal, smallest subnormal, and epsilon (the ULP of 1.0). "
        "Everything between max and the overflow threshold rounds to max; beyond, to infinity.");
  ImGui::EndTable();
}

// ---- the number line ------------------------------------------------------------------

void draw_number_line(const BitsState& s) {
  ImGui::Text("Where each format can hold a number (log2 of the magnitude)");
  help_marker(
      "Each row is one format. Dark grey: so small it rounds to zero (underflow, below half the "
      "smallest subnormal). Light: subnormal range (fewer significant bits). Bright: normal "
      "range (full precision). Red: overflow, to infinity (FP8 E4M3: saturates or NaN). The "
      "yellow line is your number. FP16 covers only 2^-24..2^16: that is why gradients need a "
      "loss scale, and why BF16 (FP32's range, fewer bits) does not. Chapter 04 draws the same "
      "picture from the formats' three numbers: exponent bits, mantissa bits, bias.");
  const auto& formats = all_formats();
  const float fs = ImGui::GetFontSize();
  const float row = fs * 1.5f, label_w = fs * 6;
  double lo = -152, hi = 132;
  if (s.only) {  // one format: zoom to its range
    lo = std::floor(std::log2(s.only->min_subnormal())) - 6;
    hi = std::ceil(std::log2(s.only->max_finite())) + 6;
  }
  const struct {
    ImU32 c;
    const char* label;
  } keys[] = {{IM_COL32(70, 70, 78, 255), "rounds to zero (underflow)"},
              {IM_COL32(90, 150, 200, 153), "subnormal: fewer bits"},
              {IM_COL32(80, 170, 245, 255), "normal: full precision"},
              {IM_COL32(200, 60, 60, 204), "overflow: inf (E4M3: NaN or saturate)"},
              {IM_COL32(255, 230, 60, 255), "your number"}};
  ImVec2 p = ImGui::GetCursorScreenPos();
  float width = ImGui::GetContentRegionAvail().x;
  int rows = static_cast<int>(formats.size());
  // The legend wraps when the window is narrow (or --ui-scale large): count its lines first.
  int legend_lines = 1;
  float x = label_w;
  for (const auto& k : keys) {
    float w = fs * 2.6f + ImGui::CalcTextSize(k.label).x;
    if (x + w > width && x > label_w) ++legend_lines, x = label_w;
    x += w;
  }
  ImGui::Dummy(ImVec2(width, row * rows + fs * (1.6f + 1.3f * legend_lines)));
  ImDrawList* dl = ImGui::GetWindowDrawList();
  PlotFrame fr;
  fr.dl = dl;
  fr.p0 = {p.x + label_w, p.y};
  fr.p1 = {p.x + width - fs, p.y + row * rows};
  fr.x0 = lo, fr.x1 = hi, fr.y0 = 0, fr.y1 = 1;
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  double tick = nice_step(hi - lo, static_cast<int>((fr.p1.x - fr.p0.x) / (fs * 4)));
  tick = std::max(4.0, tick);
  for (double e : linear_ticks(lo, hi, tick)) {
    float x = fr.px(e);
    dl->AddLine({x, fr.p0.y}, {x, fr.p1.y}, IM_COL32(255, 255, 255, 25));
    std::string l = pow2_label(e);
    dl->AddText({x - ImGui::CalcTextSize(l.c_str()).x * 0.5f, fr.p1.y + 2}, text, l.c_str());
  }
  for (int r = 0; r < rows; ++r) {
    const FloatFormat& f = *formats[r];
    float y0 = p.y + r * row + 2, y1 = p.y + (r + 1) * row - 2;
    bool dim = s.only && s.only != &f;
    int a = dim ? 90 : 255;
    dl->AddText({p.x, y0}, IM_COL32(220, 220, 220, a), f.name);
    double e_sub = std::log2(f.min_subnormal()), e_norm = std::log2(f.min_normal());
    double e_max = std::log2(f.max_finite());
    auto band = [&](double e0, double e1, ImU32 c) {
      float x0 = std::max(fr.p0.x, fr.px(e0)), x1 = std::min(fr.p1.x, fr.px(e1));
      if (x1 > x0) dl->AddRectFilled({x0, y0}, {x1, y1}, c);
    };
    band(lo, e_sub - 1, IM_COL32(70, 70, 78, a));                // rounds to zero
    band(e_sub - 1, e_sub, IM_COL32(70, 70, 78, a / 2));         // rounds to 0 or min subnormal
    band(e_sub, e_norm, IM_COL32(90, 150, 200, a * 3 / 5));      // subnormal
    band(e_norm, e_max, IM_COL32(80, 170, 245, a));              // normal
    band(e_max, hi, IM_COL32(200, 60, 60, a * 4 / 5));           // overflow
  }
  double mag = std::fabs(s.value);
  if (std::isfinite(mag) && mag > 0) {
    float x = fr.px(std::clamp(std::log2(mag), lo, hi));
    dl->AddLine({x, fr.p0.y - 2}, {x, fr.p1.y + 2}, IM_COL32(255, 230, 60, 255), 2.5f);
  }
  // legend
  x = fr.p0.x;
  float y = fr.p1.y + fs * 1.3f;
  for (const auto& k : keys) {
    float w = fs * 2.6f + ImGui::CalcTextSize(k.label).x;
    if (x + w > p.x + width && x > fr.p0.x) x = fr.p0.x, y += fs * 1.3f;
    dl->AddRectFilled({x, y + fs * 0.2f}, {x + fs * 0.8f, y + fs}, k.c);
    dl->AddText({x + fs * 1.1f, y}, text, k.label);
    x += w;
  }
}

}  // namespace

bool bits_set_text(BitsState& s, const std::string& text, const FloatFormat& hex_format) {
  s.text = text;
  return parse_input(s, hex_format);
}

void draw_bits_panel(App& app) {
  BitsState& s = app.bits;
  if (s.only) s.focus = s.only;
  draw_input(app, *s.focus);
  ImGui::Spacing();
  draw_format_table(app);
  ImGui::Spacing();
  draw_number_line(s);
  ImGui::Spacing();
  draw_details(s, *s.focus);
  ImGui::Spacing();
  ImGui::TextDisabled("%s", kChapter);
}

}  // namespace hg::viewer
