// Grades the chapter 04 exercise: student_float_to_half (exercise.cpp) against halfgrad's
// float -> half conversion (framework/dtype/half.h, itself tested against the CPU's F16C
// instructions on all 2^32 inputs).
//
// The inputs come in groups, easy first; grading stops at the first group with a mistake
// and explains the first failing input of the group's list: the bits expected and obtained
// and, in words, the rule that was broken (truncation, a tie not sent to even, a lost
// subnormal, ...). exercise.cpp's function is called on a group's inputs in an order drawn
// from this grading's seed, so answers replayed in the order of one grading's calls fit no
// other. The last group is every float32 bit pattern: 4,294,967,296 inputs (OpenMP,
// seconds); --quick samples it from a block drawn from the seed.
//
//   ./lab check 04             exit 0: all correct; exit 1: a mistake was found
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "framework/dtype/half.h"
#include "lessons/grader/grader.h"

uint16_t student_float_to_half(float x);  // exercise.cpp

namespace {

using grader::format;
using grader::see;

float float_of(uint32_t u) { float x; std::memcpy(&x, &u, 4); return x; }
bool is_half_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
double half_value(uint16_t magnitude) {  // of the magnitude bits; 0x7c00 counts as 65536 here
  return magnitude == 0x7c00 ? 65536.0 : double(hg::half_bits_to_float(magnitude));
}

// Right answer? A NaN may come back as any NaN with the right sign: fold() maps each of
// them to one value, and an answer is right when it folds to what the expected one folds to.
uint16_t fold(float x, uint16_t h) { return std::isnan(x) && is_half_nan(h) ? uint16_t((h & 0x8000) | 0x7e00) : h; }
bool correct(float x, uint16_t got, uint16_t expected) { return fold(x, got) == fold(x, expected); }

// What went wrong, in words: the rule, not the code.
std::string explain(float x, uint16_t got, uint16_t expected) {
  std::string head = format("input %s: expected 0x%04x (%.9g), you gave 0x%04x (%.9g)\n",
                            grader::show_float(x).c_str(), expected,
                            double(hg::half_bits_to_float(expected)), got,
                            double(hg::half_bits_to_float(got)));
  if (std::isnan(x))
    return head + "A NaN must stay a NaN. FP16's NaN has the exponent field all ones and a mantissa "
                  "that is not zero. The payload bits FP16 has room for may all be zero (here they "
                  "are), and then the result is inf, not NaN: the hardware also sets the top "
                  "mantissa bit (the \"quiet\" bit) of every NaN it converts.\n" +
           see("## 1. Fields and bias");
  if (std::isinf(x))
    return head + "inf stays inf, with its sign: FP16 has an inf of its own.\n" + see("## 1. Fields and bias");
  if ((got & 0x8000) != (expected & 0x8000))
    return head + "The sign is wrong. The sign is a bit of its own in both formats and takes no part "
                  "in rounding: -x has the bits of x with the sign bit set, for every input, zero "
                  "included (-0.0 is a value of its own).\n" + see("## 1. Fields and bias");
  const uint16_t want = expected & 0x7fff, gave = got & 0x7fff;
  const double ax = std::fabs(double(x));
  // The FP16 neighbours of |x|: down <= |x| < up (up = 0x7c00 above 65504).
  const uint16_t down = half_value(want) > ax ? uint16_t(want - 1) : want;
  const uint16_t up = uint16_t(down + 1);
  const bool tie = (half_value(down) + half_value(up)) / 2 == ax;
  if (want == 0x7c00)
    return head + "Overflow: after rounding this value is larger than 65504, the largest finite "
                  "FP16, so it must become inf. Every float from 65520 up rounds past 65504 (65520 "
                  "is a tie between 65504 and 65536; ties go to the even one, 65536, which FP16 "
                  "cannot hold: inf).\n" + see("### Overflow: why 65520 becomes inf in FP16");
  if (gave == 0x7c00)
    return head + "This value is not an overflow: it rounds to a finite FP16 (the largest is 65504).\n" +
           see("### Overflow: why 65520 becomes inf in FP16");
  if (ax < 0x1p-14) {
    if (gave == 0 && want != 0)
      return head + "FP16 has subnormal numbers: below 2^-14 (the smallest normal) the exponent field "
                    "is 0, there is no implicit leading 1, and the values are the multiples of 2^-24. "
                    "This input is one of them (after rounding), not zero.\n" + see("## 3. Subnormals");
    if (want == 0)
      return head + "Underflow: this value is at most 2^-25, half of the smallest subnormal 2^-24, so "
                    "it rounds to a signed zero (exactly 2^-25 is a tie, and 0 is the even "
                    "neighbour).\n" + see("### Underflow: why 2^-25 rounds to 0 and 2^-25 + ε to 2^-24");
  }
  const char* where = ax < 0x1p-14 ? " (here in the subnormal range, where the unit is 2^-24)" : "";
  if (gave == down && want == up) {
    if ((down & 0x3ff) == 0x3ff && gave != want && (gave & 0x7c00) == (want & 0x7c00))
      return head + "A round-up from the largest mantissa (all ones) must carry into the exponent: "
                    "1.1111111111 + one unit in the last place = 10.0000000000, the next power of two.\n" +
             see("## 1. Fields and bias");
    if (tie)
      return head + format("An exact tie (the bits FP16 cannot keep are exactly half a unit) goes to the "
                           "even neighbour, the one whose last mantissa bit is 0; here that is the upper "
                           "one%s.\n", where) + see("## 1. Fields and bias");
    return head + format("You truncated: the bits FP16 has no room for were dropped, which always rounds "
                         "toward zero. Round to nearest: when the part that does not fit is more than "
                         "half a unit of the last kept bit, the result is the next FP16 value up%s.\n",
                         where) + see("## 1. Fields and bias");
  }
  if (gave == up && want == down) {
    if (tie)
      return head + format("An exact tie (the bits FP16 cannot keep are exactly half a unit) was rounded "
                           "up, away from zero. Ties go to even: to the neighbour whose last mantissa bit "
                           "is 0, here the lower one%s. Always rounding ties up biases every sum upward; "
                           "ties to even cancel on average.\n", where) + see("## 1. Fields and bias");
    return head + format("Rounded up although the part that does not fit is less than half a unit: the "
                         "nearest FP16 value is the lower one%s.\n", where) + see("## 1. Fields and bias");
  }
  if ((gave & 0x7c00) != (want & 0x7c00) && ax >= 0x1p-14)
    return head + "The exponent is wrong: FP16 stores the same power of two as FP32, written with its own "
                  "bias (15 instead of 127), in its 5 exponent bits.\n" + see("## 1. Fields and bias");
  return head + format("The nearest FP16 value to this float is the expected one%s; yours is %d units "
                       "away.\n", where, int(gave) - int(want)) + see("## 1. Fields and bias");
}

struct Group {
  const char* name;
  std::vector<float> inputs;
};

// The floats next to c (two on each side), with both signs.
void add_around(std::vector<float>& v, float c) {
  float lo = c, hi = c;
  for (int k = 0; k < 2; ++k) {
    lo = std::nextafter(lo, -INFINITY);
    hi = std::nextafter(hi, INFINITY);
  }
  for (float x : {lo, std::nextafter(c, -INFINITY), c, std::nextafter(c, INFINITY), hi}) {
    v.push_back(x);
    v.push_back(-x);
  }
}

std::vector<Group> make_groups() {
  std::vector<Group> g;
  g.push_back({"zeros, signs and simple values", {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, 0.5f, -3.0f,
                                                  1.5f, 1000.0f, 0.25f, 65504.0f, -65504.0f}});
  Group exact{"every FP16 value, given exactly as a float", {}};
  Group between{"rounding between neighbouring FP16 values", {}};
  Group ties{"ties (exactly half way) round to even", {}};
  Group sub{"subnormals and underflow (|x| < 2^-14)", {}};
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // all finite non-negative halves
    float v = hg::half_bits_to_float(uint16_t(h));
    float next = h + 1 < 0x7c00 ? hg::half_bits_to_float(uint16_t(h + 1)) : 65536.0f;
    float mid = (v + next) / 2;  // exact in float
    exact.inputs.push_back(v);
    exact.inputs.push_back(-v);
    Group& target = v < 0x1p-14f ? sub : between;
    for (float x : {v + (next - v) / 4, v + 3 * (next - v) / 4, std::nextafter(mid, 0.0f),
                    std::nextafter(mid, INFINITY), std::nextafter(next, 0.0f)}) {
      target.inputs.push_back(x);
      target.inputs.push_back(-x);
    }
    (v < 0x1p-14f ? sub : ties).inputs.push_back(mid);
    (v < 0x1p-14f ? sub : ties).inputs.push_back(-mid);
  }
  for (float x : {0x1p-25f, 0x1p-26f, 1e-10f, 1e-45f, 1e-38f, 0x1p-24f}) add_around(sub.inputs, x);
  g.push_back(std::move(exact));
  g.push_back(std::move(between));
  g.push_back(std::move(ties));
  g.push_back(std::move(sub));
  Group over{"overflow to inf", {}};
  for (float x : {65504.0f, 65519.0f, 65520.0f, 65536.0f, 1e5f, 1e10f, 3.4028235e38f})
    add_around(over.inputs, x);
  g.push_back(std::move(over));
  g.push_back({"inf and NaN", {INFINITY, -INFINITY, NAN, -NAN, float_of(0x7f800001u),
                               float_of(0xffbfffffu), float_of(0x7fc00000u), float_of(0x7f802000u)}});
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"04", "F32 -> F16, rounded to nearest even", "04_number_formats", "Exercise"}, argc, argv);
  g.own_code_only(
      {{"hg::float_to_half_bits", "halfgrad's own F32 -> F16 conversion"},
       {"hg::float_to_half_bits_n", "halfgrad's F32 -> F16 conversion of arrays"},
       {"hg::half::half(float)", "the hg::half constructor, which rounds with halfgrad's conversion"},
       {"hg::convert_bits", "halfgrad's conversion between any two formats"},
       {"hg::encode", "halfgrad's rounding of a value into any format"},
       {"hg::cast", "the tensor cast, which rounds with halfgrad's conversion"},
       {"hg::Tensor::to", "the tensor cast, which rounds with halfgrad's conversion"},
       {"hg::", "a function of halfgrad: the conversion is written with the bits of x alone"},
       {"__truncsfhf2", "the compiler's _Float16 conversion"},
       {"__truncdfhf2", "the compiler's _Float16 conversion"}},
      {{"vcvtps2ph", "the CPU's F16C conversion"},
       {"vcvtss2sh", "the CPU's AVX512-FP16 conversion"},
       {"vcvtsd2sh", "the CPU's AVX512-FP16 conversion"},
       {"vcvtps2phx", "the CPU's AVX512-FP16 conversion"}});
  g.stop_at_first_failure();
  const std::vector<Group> groups = make_groups();
  for (size_t k = 0; k < groups.size(); ++k) {
    const Group& group = groups[k];
    g.check(format("%s (%zu inputs)", group.name, group.inputs.size()), [&]() -> std::string {
      const std::vector<uint16_t> answers =
          g.answers(group.inputs, k, [](float x) { return student_float_to_half(x); });
      for (size_t i = 0; i < group.inputs.size(); ++i) {
        const float x = group.inputs[i];
        const uint16_t expected = hg::float_to_half_bits(x);
        if (!correct(x, answers[i], expected)) return explain(x, answers[i], expected);
      }
      return "";
    });
  }
  double seconds = 0;
  const int64_t stride = g.quick() ? 64 : 1;
  const bool all = g.check(g.quick() ? "every 64th block of float32 bit patterns (67,108,864 inputs, --quick)"
                                     : "every float32 bit pattern (4,294,967,296 inputs)", [&]() -> std::string {
    const auto t0 = std::chrono::steady_clock::now();
    // The expected bits from the array conversion (the F16C instructions when the CPU has
    // them, the same bits as the software path).
    const auto bad = grader::first_wrong_float(
        g, stride, [](float x) { return student_float_to_half(x); },
        [](const float* in, uint16_t* out, size_t n) { hg::float_to_half_bits_n(in, out, n); },
        [](float x, uint16_t h) { return fold(x, h); });
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!bad) return "";
    const float x = float_of(bad->bits);
    return explain(x, bad->answer, hg::float_to_half_bits(x));
  });
  if (all) g.note(format("(%.1f s on %d threads)", seconds, omp_get_max_threads()));
  return g.finish();
}
