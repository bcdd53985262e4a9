// Chapter 04 — number formats.
//
//   ./lab lesson 04                      the format table and four experiments
//   ./lab lesson 04 --value 0.1          0.1 taken apart in every format
//   ./lab lesson 04 --value 1e-8,70000 --format fp16
//
// Every number printed here is computed from hg::FloatFormat (framework/dtype/float_format.h)
// and the conversions in framework/dtype: nothing is typed in by hand.
//
// The story, in order:
//   1. the table: bits, bias, range and precision of FP32, TF32, FP16, BF16, FP8
//   2. 65520 becomes inf in FP16                 (range: overflow)
//   3. 2^-25 becomes 0, a hair more becomes 2^-24 (range: underflow and subnormals)
//   4. 2048 + 1 = 2048 in FP16                    (precision: lost weight updates)
//   5. 0.1 in every format                        (precision: rounding error)
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/dtype/float_format.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"

namespace {

// "2^-24" as a power of two, for the reader's convenience ("-2^-24" too).
std::string pow2_text(double x) {
  if (x == 0 || !std::isfinite(x)) return "";
  int e;
  double frac = std::frexp(std::fabs(x), &e);
  if (frac != 0.5) return "";
  return fmt::format("{}2^{}", x < 0 ? "-" : "", e - 1);
}

// A short rendering of a double: %.9g, or the power of two when it is one.
std::string num(double x) {
  std::string p = pow2_text(x);
  std::string s = fmt::format("{:.9g}", x);
  bool plain = p.empty() || (std::fabs(x) >= 1 && std::fabs(x) < 1024);  // 2^3 reads fine as 8
  return plain ? s : s + " (" + p + ")";
}

// ---- 1. the table --------------------------------------------------------------------------
void print_table(const std::vector<const hg::FloatFormat*>& formats) {
  auto p2 = [](double x) { return fmt::format("{} = {:.3g}", pow2_text(x), x); };
  fmt::print("{:<9} {:>4} {:>2} {:>3} {:>4}  {:>11}  {:>17}  {:>17}  {:>16}  {:>6}  {}\n", "format",
             "bits", "E", "M", "bias", "max finite", "min normal", "min subnormal", "epsilon",
             "digits", "inf");
  for (const hg::FloatFormat* f : formats) {
    fmt::print("{:<9} {:>4} {:>2} {:>3} {:>4}  {:>11.6g}  {:>17}  {:>17}  {:>16}  {:>6.2f}  {}\n",
               f->name, f->total_bits(), f->exponent_bits, f->mantissa_bits, f->bias, f->max_finite(),
               p2(f->min_normal()), p2(f->min_subnormal()), p2(f->epsilon()), f->decimal_digits(),
               f->has_inf ? "yes" : "no");
  }
  fmt::print("E, M: exponent and mantissa bits. epsilon = 2^-M, the gap after 1.0; rounding to "
             "nearest is off by at most epsilon/2 relative.\n"
             "digits = (M+1)·log10(2), decimal digits of precision. Subnormals fill the gap "
             "between 0 and min normal with spacing min subnormal.\n"
             "FP8 E4M3 has no inf: its top exponent holds finite values up to 448; only "
             "S.1111.111 is NaN.\n");
}

// ---- decomposition of one value in one format ---------------------------------------------
void print_decomposition(double x, const hg::FloatFormat& f) {
  hg::Decomposed d = hg::decompose(x, f);
  std::string fields = hg::bits_string(d.bits, f);
  std::string what;
  switch (d.cls) {
    case hg::FloatClass::Normal: {
      double significand = std::fabs(d.value) / std::ldexp(1.0, d.unbiased_exponent);  // 1.xxx
      what = fmt::format("normal: {}2^{} × {}", d.sign ? "-" : "", d.unbiased_exponent,
                         hg::exact_decimal(significand));
      break;
    }
    case hg::FloatClass::Subnormal:
      what = fmt::format("subnormal: {}{} × 2^{}", d.sign ? "-" : "", d.mantissa_field,
                         f.min_exponent() - f.mantissa_bits);
      break;
    default:
      what = hg::to_string(d.cls);
  }
  fmt::print("  {:<9} {}  {}\n", f.name, fields, what);
  fmt::print("  {:<9} stored {}\n", "", d.exact_decimal);
  if (std::isnan(x)) return;
  if (std::isnan(d.value) || std::isinf(d.value)) {
    if (!std::isinf(x)) {
      double sat = hg::decode(hg::encode(x, f, hg::Fp8Overflow::Saturate), f);
      fmt::print("  {:<9} too large: the largest finite {} is {} (a saturating conversion gives {})\n",
                 "", f.name, num(f.max_finite()), num(sat));
    }
    return;
  }
  fmt::print("  {:<9} error {:+.3g} (relative {:.3g}, {:.2f} ulp; ulp here {})\n", "",
             d.value - x, d.rel_error, d.error_ulps, num(d.ulp));
  fmt::print("  {:<9} neighbours {} < stored < {}\n", "", num(d.next_down), num(d.next_up));
}

void print_value(double x, const std::vector<const hg::FloatFormat*>& formats) {
  fmt::print("\n{}   (as a double, exactly {})\n", num(x), hg::exact_decimal(x));
  for (const hg::FloatFormat* f : formats) print_decomposition(x, *f);
}

// ---- 2-5. the experiments ------------------------------------------------------------------
void overflow_example() {
  const hg::FloatFormat& f = hg::kFP16;
  double max = f.max_finite();
  double gap = hg::decompose(max, f).ulp;
  fmt::print("\n2. Overflow: 65520 becomes inf in FP16\n");
  fmt::print("   The largest FP16 is {}; values there are {} apart. Halfway to the next (which "
             "would need a larger exponent) is {}.\n",
             num(max), num(gap), num(max + gap / 2));
  for (double x : {65519.0, 65520.0}) {
    hg::Decomposed d = hg::decompose(x, f);
    fmt::print("   {} -> {:<8}  ({})\n", num(x), hg::exact_decimal(d.value), hg::bits_string(d.bits, f));
  }
  fmt::print("   65520 is a tie; ties go to the even mantissa, and 65504's mantissa 1111111111 is "
             "odd, so it rounds up: overflow, inf.\n");
  hg::Decomposed bf = hg::decompose(65520, hg::kBF16);
  fmt::print("   BF16 has FP32's exponent range: 65520 -> {} there.\n", bf.exact_decimal);
}

void underflow_example() {
  const hg::FloatFormat& f = hg::kFP16;
  double tiny = f.min_subnormal();
  fmt::print("\n3. Underflow: 2^-25 becomes 0, a hair more becomes 2^-24\n");
  fmt::print("   The smallest FP16 above 0 is the subnormal {} = 0 00000 0000000001.\n", num(tiny));
  double half_tiny = tiny / 2;
  double above = std::nextafter(half_tiny, 1.0);  // the next double: 2^-25 (1 + 2^-52)
  float above_f = std::nextafter(float(half_tiny), 1.0f);
  const char* labels[] = {"2^-25", "2^-25 + one double step", "2^-25 + one float step"};
  int i = 0;
  for (double x : {half_tiny, above, double(above_f)}) {
    hg::Decomposed d = hg::decompose(x, f);
    fmt::print("   {:<24} {:<24} -> {}\n", labels[i++], fmt::format("{:.17g}", x),
               d.value == 0 ? "0" : num(d.value));
  }
  fmt::print("   2^-25 is exactly halfway between 0 and 2^-24: a tie, and 0 is the even one.\n"
             "   Anything above the halfway point, however little, rounds up to 2^-24.\n"
             "   Gradients this small are common: this is why chapter 08 scales the loss.\n");
}

void lost_update_example() {
  fmt::print("\n4. Precision: 2048 + 1 = 2048 in FP16\n");
  hg::half a(2048.0f), b(1.0f);
  hg::half sum(float(a) + float(b));  // add in float, store in FP16: what a GPU does
  double gap = hg::decompose(2048, hg::kFP16).ulp;
  fmt::print("   FP16 numbers in [2048, 4096) are {} apart. 2048 + 1 = {} stored as {}: a tie, "
             "rounded to the even 2048.\n",
             num(gap), float(a) + float(b), float(sum));
  // A weight of 1.0 and 10000 SGD updates of +1e-4 (lr · grad).
  const float update = 1e-4f;
  const int steps = 10000;
  float w32 = 1.0f;
  hg::half w16(1.0f);
  hg::bfloat16 wbf(1.0f);
  for (int i = 0; i < steps; ++i) {
    w32 += update;
    w16 = hg::half(float(w16) + update);  // compute in float, store in the narrow format
    wbf = hg::bfloat16(float(wbf) + update);
  }
  double eps = hg::kFP16.epsilon();
  fmt::print("   The same at 1.0: the gap is epsilon = {}, so an update smaller than half of it, "
             "{}, vanishes.\n",
             num(eps), num(eps / 2));
  fmt::print("   {} updates of +{} to a weight of 1.0:\n", steps, update);
  fmt::print("     FP32 weight -> {:.6f}   FP16 weight -> {:.6f}   BF16 weight -> {:.6f}\n", w32,
             float(w16), float(wbf));
  fmt::print("   Every FP16 and BF16 update was lost (BF16's gap at 1.0 is even wider, {}).\n"
             "   Chapter 07 keeps an FP32 master copy of the weights for exactly this reason.\n",
             num(hg::kBF16.epsilon()));
}

void point_one_example(const std::vector<const hg::FloatFormat*>& formats) {
  fmt::print("\n5. 0.1 in every format (0.1 has no finite binary expansion: every format rounds)\n");
  for (const hg::FloatFormat* f : formats) {
    hg::Decomposed d = hg::decompose(0.1, *f);
    fmt::print("   {:<9} {:<34} relative error {:.2e}\n", f->name, d.exact_decimal, d.rel_error);
  }
}

// "0.1", "1e-8", "-65520", "inf", "nan", "0x1p-24" and "2^-24" are numbers.
bool parse_number(const std::string& text, double& out) {
  size_t caret = text.find('^');
  if (caret != std::string::npos && !text.empty() && text[0] == '-') {  // -2^-24 is -(2^-24)
    if (!parse_number(text.substr(1), out)) return false;
    out = -out;
    return true;
  }
  if (caret != std::string::npos) {
    double base, exponent;
    if (!parse_number(text.substr(0, caret), base) || !parse_number(text.substr(caret + 1), exponent))
      return false;
    out = std::pow(base, exponent);
    return true;
  }
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

// A number beyond a double's range (1e999, 2^2000) would be shown as inf, which is not the
// value asked for: such a value is refused; "inf" itself is a value like any other.
bool beyond_double(const std::string& text, double v) {
  return std::isinf(v) && text.find("inf") == std::string::npos && text.find("INF") == std::string::npos &&
         text.find("Inf") == std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 04 — number formats: FP32, TF32, FP16, BF16, FP8 taken apart."};
  std::vector<std::string> value_texts;
  std::string format_id;
  app.add_option("--value", value_texts,
                 "decompose these values in every format (repeat it, or a list: 0.1,1e-8,2^-24)")
      ->delimiter(',');
  app.add_option("--format", format_id, "only this format: " + hg::format_ids());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "lesson 04: {} (try --help)\n", e.what());
    return 2;
  }

  std::vector<const hg::FloatFormat*> formats = hg::all_formats();
  if (app.count("--format") > 0) {  // given, even as '': an empty name is not a format
    const hg::FloatFormat* f = hg::find_format(format_id);
    if (!f) {
      fmt::print(stderr, "lesson 04: unknown --format '{}'; expected one of {}\n", format_id,
                 hg::format_ids());
      return 2;
    }
    formats = {f};
  }
  std::vector<double> values;
  for (const std::string& t : value_texts) {
    double v;
    if (!parse_number(t, v)) {
      fmt::print(stderr,
                 "lesson 04: --value '{}' is not a number; expected a decimal like 0.1, 1e-8, "
                 "65504, 2^-24, inf or nan\n",
                 t);
      return 2;
    }
    if (beyond_double(t, v)) {
      fmt::print(stderr, "lesson 04: --value '{}' is beyond the range of a double (about 1.8e308); write "
                         "inf for infinity\n", t);
      return 2;
    }
    values.push_back(v);
  }

  if (!values.empty()) {
    for (double v : values) print_value(v, formats);
    return 0;
  }
  fmt::print("Chapter 04 — number formats\n\n1. The formats (computed from hg::FloatFormat)\n\n");
  print_table(formats);
  if (app.count("--format") > 0) return 0;
  overflow_example();
  underflow_example();
  lost_update_example();
  point_one_example(formats);
  fmt::print("\nNext: ./lab lesson 04 --value 0.1        every field, the exact value, the error in ulps\n"
             "      ./lab lesson 04 --value 70000,1e-8 --format bf16\n"
             "      lessons/04_number_formats/README.md  the chapter; exercise.cpp, then ./lab check 04\n");
  return 0;
}
