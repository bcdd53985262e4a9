// Grades the chapter 08 exercise (choose_loss_scale and fraction_underflowing).
//
// Histograms are made the way the chapter's run makes them: synthetic gradient arrays,
// times the recording scale, through hg::amp::GradHistogram::add. The learner's S is
// compared with the rule worked out here, and checked against the raw gradients: at S no
// gradient becomes inf in F16. The underflow fraction is compared with a count over the
// raw gradients. A wrong S is explained by its ratio to the right one (twice too large: the
// top bin's upper edge; the recording scale forgotten; headroom the wrong way; ...).
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "framework/dtype/half.h"
#include "lessons/08_loss_scaling/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;
using hg::amp::GradHistogram;

namespace {

// Gradients with |g| = 2^u for u uniform in [lo, hi), random signs.
std::vector<float> gradients(double lo, double hi, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<float> g(n);
  for (float& x : g) x = float(std::exp2(u(rng)) * (rng() % 2 ? 1 : -1));
  return g;
}

GradHistogram record(const std::vector<float>& g, double scale) {
  GradHistogram h("w", scale);
  std::vector<float> scaled(g.size());
  for (size_t i = 0; i < g.size(); ++i) scaled[i] = float(double(g[i]) * scale);
  h.add(scaled.data(), int64_t(scaled.size()));
  return h;
}

// The rule, written independently of solution/: the top bin's upper edge times S/scale,
// times 2^headroom, at most 2^15.
float right_scale(const GradHistogram& h, int headroom) {
  if (h.inf + h.nan + h.above > 0) return 0.0f;
  int top = std::numeric_limits<int>::min();
  for (size_t i = 0; i < h.counts.size(); ++i)
    if (h.counts[i]) top = h.exp_min + int(i);
  if (top == std::numeric_limits<int>::min()) return 0.0f;
  return float(h.scale * std::exp2(15 - (top + 1) - headroom));
}

std::string explain_scale(const GradHistogram& h, int headroom, float got, float want) {
  std::string head = format("histogram recorded at scale %g, headroom %d: you chose S = %g, the right S is %g.\n",
                            h.scale, headroom, double(got), double(want));
  if (want == 0.0f)
    return head + format("This histogram cannot tell how large the gradients are: %lld inf, %lld NaN, %lld above "
                         "the window. An inf only says the value passed 65504 at the recording scale, not by "
                         "how much. Return 0: record again with a smaller scale.",
                         (long long)h.inf, (long long)h.nan, (long long)h.above);
  if (got == 0.0f) return head + "This histogram can tell: its largest gradients are in a bin of the window.";
  if (!(got > 0) || std::exp2(std::round(std::log2(double(got)))) != double(got))
    return head + "A loss scale is a power of two: multiplying and dividing by it is exact in every format.";
  const double ratio = double(got) / double(want);
  const double r = h.scale;
  if (ratio == 2.0)
    return head + "Your S is twice the largest safe one. A bin e holds values up to (not including) 2^(e+1), "
                  "and in F16 everything from 65520 up becomes inf: the binade [2^15, 2^16) already reaches "
                  "past it. The top bin, moved by S, must end at or below 2^15. " +
           see("### Overflow: why 65520 becomes inf in FP16", "04_number_formats");
  if (ratio == 0.5)
    return head + "Your S is half the largest safe one: one more doubling still keeps the top bin, upper edge "
                  "included, at or below 2^15 = 32768 < 65504.";
  if (r != 1.0 && (ratio == r || ratio == 1.0 / r))
    return head + format("The histogram was recorded at scale %g: its counts are of %g·g, not of g. Take the "
                         "recording scale out before choosing yours.", r, r);
  if (headroom != 0 && ratio == std::exp2(2 * headroom))
    return head + "Headroom is room to spare for gradients that grow: it makes S smaller, by 2^headroom.";
  if (headroom != 0 && ratio == std::exp2(headroom))
    return head + "Headroom was not taken into account: leave 2^headroom of room above the top bin.";
  return head + "Slide the histogram right by log2 S bins: its highest non-empty bin, upper edge included, must "
                "stay at or below 2^15 (and 2^headroom below that). " + see("## Exercise");
}

std::string grade_scale(grader::Grader& gr, const std::vector<float>& g, double scale, int headroom) {
  const GradHistogram h = record(g, scale);
  const float got = gr.run([&] { return choose_loss_scale(h, headroom); });
  const float want = right_scale(h, headroom);
  if (got != want) return explain_scale(h, headroom, got, want);
  for (float x : g)  // the point of the rule: nothing overflows at S, even grown by 2^headroom
    if (want > 0 && std::isfinite(x) && !std::isfinite(float(hg::half(float(double(x) * want * std::exp2(headroom))))))
      return format("internal: the rule's S = %g overflows %g", double(want), double(x));  // cannot happen
  return "";
}

std::string grade_fraction(grader::Grader& gr, const std::vector<float>& g, double scale, float S) {
  const GradHistogram h = record(g, scale);
  const double got = gr.run([&] { return fraction_underflowing(h, S); });
  int64_t under = 0;
  for (float x : g) under += std::fabs(double(x) * S) < std::exp2(-24);
  const double want = double(under) / double(g.size());
  if (std::fabs(got - want) <= 1e-12) return "";
  std::string head = format("recorded at scale %g, at S = %g: you said %.6f of the gradients underflow; %.6f do "
                            "(|S·g| < 2^-24).\n", scale, double(S), got, want);
  if (got == 0.0) return head + "Still the TODO? Slide the histogram by log2(S / scale) bins and count what is "
                                "left of 2^-24.";
  const double unscaled = double(h.fp16_underflow) / double(g.size());
  if (std::fabs(got - unscaled) <= 1e-12)
    return head + "That is the fraction at the recording scale (the histogram's fp16_underflow count); the "
                  "question is about S.";
  return head + "A bin lies below 2^-24 entirely when its upper edge, moved by S, does; no bin is split at "
                "2^-24 (it is a power of two). " + see("## Exercise");
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"08", "a static loss scale from a gradient histogram", "08_loss_scaling", "Exercise"}, argc,
                   argv);
  // Nothing in halfgrad chooses a scale; what it has would answer by recording the gradients
  // again at S or by rounding them to F16 for the grader.
  g.own_code_only({{"hg::amp::GradHistogram::add", "which records gradients: the histogram is all there is"},
                   {"hg::amp::GradHistogram::GradHistogram(std::", "a new histogram, to record gradients again"},
                   {"hg::half", "halfgrad's F16, which would say what overflows by rounding"},
                   {"hg::float_to_half_bits", "halfgrad's F32 -> F16 rounding"},
                   {"hg::convert_bits", "halfgrad's rounding between formats"},
                   {"hg::encode", "halfgrad's rounding into any format"},
                   {"hg::Tensor", "the engine's tensors, whose cast to F16 would say what overflows"},
                   {"hg::amp::GradScaler", "halfgrad's dynamic loss scale"}});
  // Each check: the hand-picked gradients (fixed seeds: what the README shows), then gradients,
  // headroom and recording scales drawn from this grading's seed.
  using grader::first_wrong;
  auto drawn = [&](uint64_t stream) { return uint32_t(g.seed_for(stream)); };
  std::mt19937_64 rng = g.rng(0);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double small_top = -12 + 9 * unit(rng), mid_top = -2 + 5 * unit(rng), large_top = 16.05 + 0.9 * unit(rng);
  auto drawn_headroom = [&] { return 1 + int(rng() % 6); };
  auto drawn_scale = [&] { return std::ldexp(1.0, 1 + int(rng() % 16)); };
  const std::vector<float> small = gradients(-40, -6.5, 20000, 1);  // top bin -7
  const std::vector<float> mid = gradients(-20, 0.3, 20000, 2);     // top bin 0
  const std::vector<float> large = gradients(5, 16.8, 5000, 3);     // top bin 16: beyond F16
  const std::vector<float> small2 = gradients(-40, small_top, 20000, drawn(1));
  const std::vector<float> mid2 = gradients(-20, mid_top, 20000, drawn(2));
  const std::vector<float> large2 = gradients(5, large_top, 5000, drawn(3));
  g.check("recorded without scaling (scale 1): the largest S that keeps every gradient finite in F16", [&] {
    return first_wrong({[&] { return grade_scale(g, small, 1.0, 0); }, [&] { return grade_scale(g, mid, 1.0, 0); },
                        [&] { return grade_scale(g, small2, 1.0, 0); }, [&] { return grade_scale(g, mid2, 1.0, 0); }});
  });
  g.check("with headroom (2 and 5 doublings to spare)", [&] {
    const int h1 = drawn_headroom(), h2 = drawn_headroom();
    return first_wrong({[&] { return grade_scale(g, small, 1.0, 2); }, [&] { return grade_scale(g, mid, 1.0, 5); },
                        [&] { return grade_scale(g, small2, 1.0, h1); }, [&] { return grade_scale(g, mid2, 1.0, h2); }});
  });
  g.check("recorded at scale 1024 and at scale 2^16: the counts are of scale·g", [&] {
    const double r1 = drawn_scale(), r2 = drawn_scale();
    const int h = drawn_headroom();
    return first_wrong({[&] { return grade_scale(g, small, 1024.0, 0); }, [&] { return grade_scale(g, mid, 65536.0, 1); },
                        [&] { return grade_scale(g, small2, r1, 0); }, [&] { return grade_scale(g, mid2, r2, h); }});
  });
  g.check("gradients too large for F16 even unscaled: S below 1", [&] {
    return first_wrong({[&] { return grade_scale(g, large, 1.0, 0); }, [&] { return grade_scale(g, large2, 1.0, 0); }});
  });
  g.check("histograms that cannot tell (inf, NaN, beyond the window, all zeros): 0", [&]() -> std::string {
    std::vector<float> with_inf = mid, with_nan = mid, with_inf2 = mid2, with_nan2 = mid2;
    with_inf[7] = std::numeric_limits<float>::infinity();
    with_nan[9] = std::numeric_limits<float>::quiet_NaN();
    with_inf2[size_t(rng() % with_inf2.size())] = -std::numeric_limits<float>::infinity();
    with_nan2[size_t(rng() % with_nan2.size())] = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> zeros(100, 0.0f);
    for (const auto& v : {with_inf, with_nan, gradients(10, 20, 100, 4), zeros, with_inf2, with_nan2,
                          gradients(17, 20, 100, drawn(4))}) {
      const std::string why = grade_scale(g, v, 1.0, 0);
      if (!why.empty()) return why;
    }
    return "";
  });
  g.check("the fraction still below 2^-24 at S = 2^10, 2^16, 2^20 and 2^-2", [&]() -> std::string {
    for (float S : {1024.0f, 65536.0f, 1048576.0f})
      for (double scale : {1.0, 256.0}) {
        const std::string why = grade_fraction(g, small, scale, S);
        if (!why.empty()) return why;
      }
    std::string why = grade_fraction(g, mid, 1.0, 0.25f);
    for (int k = 0; k < 4 && why.empty(); ++k)
      why = grade_fraction(g, k % 2 ? mid2 : small2, drawn_scale(), std::ldexp(1.0f, -4 + int(rng() % 28)));
    return why;
  });
  return g.finish();
}
