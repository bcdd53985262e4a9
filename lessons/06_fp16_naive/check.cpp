// Grades the chapter 06 exercise (update_is_lost in exercise.cpp).
//
// The truth for a weight w (an F16 value) and an update u: round the exact w − u to F16
// (hg::encode from a double: w − u is exact in F64 whenever it lies near a tie) and compare
// with w. The cases go from the chapter's own numbers to every F16 weight; a wrong answer is
// explained by what kind of case it is (a tie, a power of two stepped towards zero, a
// subnormal, an overflow, or the plain half-spacing rule). Besides the hand-picked steps,
// every check asks steps of sizes drawn from this grading's seed, and asks all of its cases
// in an order drawn from it: a table of one grading's answers, or a file of them replayed in
// call order, answers the next one wrong.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "framework/dtype/decompose.h"
#include "framework/dtype/half.h"
#include "lessons/06_fp16_naive/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;

namespace {

// The value stored after the step equals w (compared as values: 0 − tiny is −0, which is 0).
bool truth(float w, float u) {
  return hg::decode(hg::encode(double(w) - double(u), hg::kFP16), hg::kFP16) == double(w);
}

struct Case {
  float w, u;
};

// The spacing of F16 numbers in w's binade (2^-24 for subnormals and 0).
double spacing_at(float w) {
  const int p = w == 0.0f ? -14 : std::max(std::ilogb(w), -14);
  return std::ldexp(1.0, p - 10);
}

std::string explain(const Case& c, bool got) {
  const bool want = truth(c.w, c.u);
  const double s = spacing_at(c.w), a = std::fabs(double(c.u));
  const bool toward_zero = c.w != 0.0f && (c.w > 0.0f) == (c.u > 0.0f);
  const bool power_of_two = c.w != 0.0f && std::fabs(c.w) == std::ldexp(1.0, std::ilogb(c.w)) &&
                            std::fabs(c.w) > 0x1p-14f;
  std::string head = format("w = %.9g, u = %.9g (w − u = %.12g): you said %s, but the weight %s.\n",
                            double(c.w), double(c.u), double(c.w) - double(c.u), got ? "lost" : "not lost",
                            want ? "stays at w" : "moves");
  if (std::fabs(c.w) == 65504.0f && !toward_zero)
    return head + "w is the largest finite F16 and u pushes it further out: the next F16 value that way is "
                  "inf, 32 away. A step of 16 or more (16 is a tie, and it goes to the even side, "
                  "inf) changes the weight — to inf.";
  if (std::fabs(c.w) < 0x1p-14f)
    return head + format("Below 2^-14 the F16 numbers are subnormal and evenly spaced, 2^-24 = %.3g apart, "
                         "zero included: around this w the spacing does not shrink further. ",
                         std::ldexp(1.0, -24)) + see("## Exercise");
  if (toward_zero && power_of_two)
    return head + format("w is a power of two and u moves it towards zero, into the binade below, where "
                         "the F16 numbers are half as far apart (%.3g instead of %.3g): the same number of "
                         "values in half the width. Half of that smaller spacing is what counts here.",
                         s / 2, s);
  const double half = toward_zero && power_of_two ? s / 4 : s / 2;
  if (a == half)
    return head + format("|u| is exactly half the spacing (%.3g): w − u lies exactly half way between w and "
                         "its neighbour, a tie. Ties go to the neighbour whose last mantissa bit is 0; w's "
                         "is %s, so %s.", s, std::fmod(std::fabs(c.w) / s, 2.0) == 0 ? "0" : "1",
                         want ? "w wins and the update is lost" : "the neighbour wins and the weight moves");
  return head + format("w is in the binade [%.9g, %.9g), where F16 numbers are %.3g apart (10 mantissa bits: "
                       "the binade's width / 1024). w − u rounds to the nearest of them: it stays w exactly "
                       "when |u| is less than half of that, %.3g. ",
                       std::ldexp(1.0, std::ilogb(c.w)), std::ldexp(2.0, std::ilogb(c.w)), s, s / 2) +
         see("## Exercise");
}

// The learner's answers for `cases`, from one child, asked in an order drawn from `stream`.
std::vector<char> answers(grader::Grader& g, const std::vector<Case>& cases, uint64_t stream = 0) {
  return g.answers(cases, stream, [](const Case& c) { return char(update_is_lost(c.w, c.u)); });
}

// Does the learner's answer depend on u at all? (The TODO as shipped does not.)
bool ignores_u(grader::Grader& g) {
  const std::vector<char> a = answers(g, {{2048.0f, -1e-3f}, {2048.0f, -100.0f}, {1.0f, 1e-8f}, {1.0f, 0.5f}});
  return a[0] == a[1] && a[2] == a[3];
}

// Does the learner's answer depend on w at all? (A fixed threshold like "lr·g < 2^-18".)
// Said once, under the first wrong check.
std::string fixed_threshold_probe(grader::Grader& g) {
  static bool said = false;
  if (said) return "";
  std::vector<Case> probe;
  for (float u : {0x1p-8f, 0x1p-12f, 0x1p-16f, 0x1p-19f, 0x1p-23f}) {
    probe.push_back({0x1p-10f, u});
    probe.push_back({2048.0f, u});
  }
  const std::vector<char> a = answers(g, probe);
  int same = 0;
  for (size_t i = 0; i < probe.size(); i += 2) same += a[i] == a[i + 1];
  if (same == 5 && (said = true))
    return "\nYour answer does not depend on w: for w = 2^-10 and w = 2048 it is the same for every u. The "
           "spacing of F16 numbers grows with |w| (2^-20 near 2^-10, 2 near 2048), and so does the smallest "
           "update that survives: no single threshold is right for every weight.";
  return "";
}

std::string grade(grader::Grader& g, const std::vector<Case>& cases, uint64_t stream) {
  if (ignores_u(g))
    return "Your answer is the same for a step of 0.001 and a step of 100 on w = 2048, and for 1e-8 and "
           "0.5 on w = 1: it does not look at u. Still the TODO? Whether w − u rounds back to w depends "
           "on how |u| compares with the spacing of F16 numbers around w. " + see("## Exercise");
  const std::vector<char> got = answers(g, cases, stream);
  for (size_t i = 0; i < cases.size(); ++i)
    if (bool(got[i]) != truth(cases[i].w, cases[i].u)) return explain(cases[i], got[i]) + fixed_threshold_probe(g);
  return "";
}

float f16_after(float w, int k) {  // the F16 value k steps above w (bit patterns, for w >= 0)
  return hg::half_bits_to_float(uint16_t(hg::float_to_half_bits(w) + k));
}

void add_step(std::vector<Case>& v, float w, double f) {  // u = ±f · the spacing at w
  for (double sign : {1.0, -1.0}) {
    const float u = float(sign * f * spacing_at(w));
    if (u != 0.0f && std::isfinite(double(w) - double(u))) v.push_back({w, u});
  }
}

// Steps of ten sizes relative to the spacing at w, both directions: eight at the edges (a
// quarter and a half of the spacing, just either side of them, an eighth and a whole) and two
// drawn from rng, anywhere up to one and a half spacings.
void add_steps(std::vector<Case>& v, float w, std::mt19937_64& rng) {
  for (double f : {0.125, 0.2499, 0.25, 0.2501, 0.4999, 0.5, 0.5001, 1.0}) add_step(v, w, f);
  std::uniform_real_distribution<double> size(0.0, 1.5);
  for (int k = 0; k < 2; ++k) add_step(v, w, size(rng));
}

// A random finite F16 value with exponent field in [lo, hi] (1..30: normal; 0: subnormal).
float random_f16(std::mt19937_64& rng, int lo, int hi) {
  const uint32_t e = uint32_t(lo) + uint32_t(rng() % uint32_t(hi - lo + 1));
  return hg::half_bits_to_float(uint16_t(e << 10 | uint32_t(rng() % 1024)));
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"06", "which updates vanish in F16", "06_fp16_naive", "Exercise"}, argc, argv);
  g.own_code_only({{"hg::amp::update_is_lost", "halfgrad's own answer to this question"},
                   {"hg::amp::lost_update_fraction", "halfgrad's count of lost updates"},
                   {"hg::half::half(float)", "the F16 rounding (hg::half), which answers without the idea"},
                   {"hg::float_to_half_bits", "halfgrad's F32 -> F16 rounding"},
                   {"hg::convert_bits", "halfgrad's rounding between formats"},
                   {"hg::encode", "halfgrad's rounding into any format"},
                   {"hg::decompose", "halfgrad's decomposition, which computes the ulp for you"},
                   {"hg::Tensor::to", "the tensor cast, which rounds to F16 with halfgrad's conversion"},
                   {"hg::", "a function of halfgrad: the answer comes from the spacing of F16 numbers, "
                            "computed here, and halfgrad's F16 rounding would answer without it"},
                   {"__truncsfhf2", "the compiler's _Float16 rounding"},
                   {"__truncdfhf2", "the compiler's _Float16 rounding"}},
                  {{"vcvtps2ph", "the CPU's F16C rounding"},
                   {"vcvtss2sh", "the CPU's AVX512-FP16 rounding"},
                   {"vcvtsd2sh", "the CPU's AVX512-FP16 rounding"},
                   {"vcvtps2phx", "the CPU's AVX512-FP16 rounding"}});

  g.check("the chapter's numbers: 2048 + 1, 1 + 0.0001, 0.03 − 0.05·1e-4", [&] {
    const float w003 = hg::half_bits_to_float(hg::float_to_half_bits(0.03f));
    return grade(g, {{2048.0f, -1.0f}, {2048.0f, -1.0001f}, {1.0f, -0.0001f}, {1.0f, -0.0005f},
                  {w003, 0.05f * 1e-4f}, {w003, 0.05f * 1e-2f}}, 1);
  });
  g.check("w = 1 and w = 1.5: steps of every size, up and down", [&] {
    std::mt19937_64 rng = g.rng(2);
    std::vector<Case> v;
    for (float w : {1.5f, -1.5f, f16_after(1.0f, 1), f16_after(1.0f, 2)}) add_steps(v, w, rng);
    for (int k = 0; k < 8; ++k) add_steps(v, f16_after(1.0f, 1 + int(rng() % 1023)), rng);  // others of [1, 2)
    return grade(g, v, 2);
  });
  g.check("ties: |u| exactly half the spacing goes to the even neighbour", [&] {
    std::mt19937_64 rng = g.rng(3);
    std::vector<Case> v;
    std::vector<float> weights = {f16_after(1.0f, 1), f16_after(1.0f, 2), f16_after(300.0f, 3), f16_after(300.0f, 4)};
    for (int k = 0; k < 12; ++k) weights.push_back((rng() % 2 ? 1 : -1) * random_f16(rng, 1, 30));
    for (float w : weights)
      if (std::fabs(w) != std::ldexp(1.0f, std::ilogb(w)))  // not a power of two: the spacing is the same both ways
        for (double sign : {1.0, -1.0}) v.push_back({w, float(sign * spacing_at(w) / 2)});
    return grade(g, v, 3);
  });
  g.check("powers of two, stepped towards zero and away from it", [&] {
    std::mt19937_64 rng = g.rng(4);
    std::vector<Case> v;
    std::vector<float> weights = {1.0f, 2048.0f, 0.25f, -4.0f, 0x1p-13f};
    for (int k = 0; k < 5; ++k) weights.push_back((rng() % 2 ? 1 : -1) * std::ldexp(1.0f, -13 + int(rng() % 28)));
    for (float w : weights) add_steps(v, w, rng);
    return grade(g, v, 4);
  });
  g.check("subnormal and zero weights (|w| < 2^-14)", [&] {
    std::mt19937_64 rng = g.rng(5);
    std::vector<Case> v;
    std::vector<float> weights = {0.0f, 0x1p-24f, 3 * 0x1p-24f, 0x1p-15f, -0x1p-20f, 0x1p-14f};
    for (int k = 0; k < 6; ++k) weights.push_back((rng() % 2 ? 1 : -1) * random_f16(rng, 0, 0));
    for (float w : weights) add_steps(v, w, rng);
    return grade(g, v, 5);
  });
  g.check("the largest weights: 65504 pushed outwards becomes inf", [&] {
    std::mt19937_64 rng = g.rng(6);
    std::uniform_real_distribution<float> step(-40.0f, 40.0f);
    std::vector<float> steps = {-8.0f, -15.99f, -16.0f, -16.01f, -40.0f, 8.0f, 16.0f, 16.01f};
    for (int k = 0; k < 8; ++k) steps.push_back(step(rng));
    std::vector<Case> v;
    for (float u : steps)
      if (u != 0.0f) v.push_back({65504.0f, u}), v.push_back({-65504.0f, -u});
    return grade(g, v, 6);
  });
  g.check("every finite F16 weight, ten step sizes each (1,260,000 cases)", [&] {
    std::mt19937_64 rng = g.rng(7);
    std::vector<Case> v;
    for (uint32_t h = 0; h < 0x7c00; ++h) {
      const float w = hg::half_bits_to_float(uint16_t(h));
      add_steps(v, w, rng);
      add_steps(v, -w, rng);
    }
    return grade(g, v, 7);
  });
  return g.finish();
}
