// Grades the chapter 04 exercise: student_float_to_half (exercise.cpp) against halfgrad's
// float -> half conversion (framework/dtype/half.h, itself tested against the CPU's F16C
// instructions on all 2^32 inputs).
//
// The inputs come in groups, easy first, and grading stops at the first group with a
// mistake, showing the first failing input, the expected and the obtained bits, and a hint.
// The last group is every float32 bit pattern: 4,294,967,296 inputs (OpenMP, a few seconds).
//
//   ./lab check 04             exit 0: all correct; exit 1: a mistake was found
#include <omp.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "framework/dtype/half.h"

uint16_t student_float_to_half(float x);  // exercise.cpp

namespace {

uint32_t bits_of(float x) { uint32_t u; std::memcpy(&u, &x, 4); return u; }
float float_of(uint32_t u) { float x; std::memcpy(&x, &u, 4); return x; }
bool is_half_nan(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

// Right answer? A NaN may come back as any NaN with the right sign.
bool correct(float x, uint16_t got, uint16_t expected) {
  if (std::isnan(x)) return is_half_nan(got) && (got & 0x8000) == (expected & 0x8000);
  return got == expected;
}

// The most likely reason, in words.
std::string hint(float x, uint16_t got, uint16_t expected) {
  const uint32_t u = bits_of(x);
  const uint32_t mant = u & 0x7fffff;
  const float ax = std::fabs(x);
  if (std::isnan(x))
    return "NaN must stay NaN: exponent field 11111 and a mantissa that is not 0 (set the quiet "
           "bit 0x0200), with the float's sign.";
  if (std::isinf(x)) return "inf must become inf: sign | 0x7c00.";
  if ((got & 0x8000) != (expected & 0x8000))
    return "the sign is wrong: bit 31 of the float becomes bit 15 of the half, for every input, "
           "zero included (-0.0 is 0x8000).";
  if ((expected & 0x7fff) == 0x7c00)
    return "overflow: this value is too large for FP16 and must become inf (0x7c00). Anything "
           ">= 65520 rounds up past 65504, the largest FP16; 65520 itself is a tie, and ties go "
           "to even, which here is the next binade: inf.";
  if (ax < 0x1p-14f) {
    if (ax <= 0x1p-25f)
      return "underflow: values up to half of 2^-24 (the smallest subnormal) round to a signed "
             "zero; exactly 2^-25 is a tie, and 0 is the even choice.";
    return "subnormals: below 2^-14 the exponent field is 0 and the value is mantissa × 2^-24. "
           "Put back the implicit 1 (mant | 0x800000), shift right by 14 - e, and round the "
           "shifted-out bits to nearest, ties to even.";
  }
  // A normal FP16: the top 10 mantissa bits are kept, the low 13 are rounded away.
  const uint32_t dropped = mant & 0x1fff;
  const uint32_t exp16 = ((u >> 23) & 0xff) - 127 + 15;
  const uint16_t truncated = uint16_t((expected & 0x8000) | (exp16 << 10) | (mant >> 13));
  if (got == truncated && expected == truncated + 1) {
    if (dropped == 0x1000)
      return "ties must round to even: the 13 dropped bits are exactly 1000000000000 (half way) "
             "and the last kept bit is 1, so round up to make it 0.";
    if ((truncated & 0x3ff) == 0x3ff)
      return "a round-up carries out of the mantissa (1.1111111111 + 1 ulp = 10.0000000000) and "
             "must increase the exponent. Adding 1 to the whole (exponent << 10 | mantissa) does it.";
    return "round, don't truncate: when the 13 dropped bits are more than half (> 0x1000), add 1.";
  }
  if (dropped == 0x1000)
    return "ties must round to even: the 13 dropped bits are exactly half way; round up only when "
           "the last kept bit is 1 (making it 0), otherwise keep it.";
  if (got == expected + 1 || got + 1 == expected)
    return "rounding: round to nearest — up when the dropped bits are more than half (> 0x1000), "
           "down when less, and to even on an exact tie.";
  return "the exponent: FP16 field = FP32 field - 127 + 15, and it goes in bits 10..14.";
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

void report_failure(float x, uint16_t got, uint16_t expected) {
  std::printf("\n  first failing input: float %.9g   bits 0x%08x\n", double(x), bits_of(x));
  std::printf("    expected 0x%04x  (%.9g)\n", expected, double(hg::half_bits_to_float(expected)));
  std::printf("    you gave 0x%04x  (%.9g)\n", got, double(hg::half_bits_to_float(got)));
  std::printf("  hint: %s\n", hint(x, got, expected).c_str());
}

}  // namespace

int main() {
  std::printf("Checking student_float_to_half (lessons/04_number_formats/exercise.cpp)\n"
              "against halfgrad's float -> half conversion.\n\n");
  for (const Group& group : make_groups()) {
    for (float x : group.inputs) {
      uint16_t expected = hg::float_to_half_bits(x);
      uint16_t got = student_float_to_half(x);
      if (!correct(x, got, expected)) {
        std::printf("  FAIL  %s\n", group.name);
        report_failure(x, got, expected);
        std::printf("\nNot yet: fix this case in exercise.cpp and run ./lab check 04 again.\n");
        return 1;
      }
    }
    std::printf("  ok    %-48s (%zu inputs)\n", group.name, group.inputs.size());
  }

  // Every float32 bit pattern, in blocks; the expected bits come from the array conversion
  // (the F16C instructions when the CPU has them, the same bits as the software path).
  std::printf("  ...   every float32 bit pattern (4,294,967,296 inputs, %d threads)\n",
              omp_get_max_threads());
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  constexpr uint64_t kBlock = 1 << 16;
  uint64_t first_bad = UINT64_MAX;
#pragma omp parallel
  {
    std::vector<float> in(kBlock);
    std::vector<uint16_t> want(kBlock);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < int64_t((uint64_t{1} << 32) / kBlock); ++b) {
      const uint64_t base = uint64_t(b) * kBlock;
      for (uint64_t i = 0; i < kBlock; ++i) in[i] = float_of(uint32_t(base + i));
      hg::float_to_half_bits_n(in.data(), want.data(), kBlock);
      for (uint64_t i = 0; i < kBlock; ++i) {
        if (!correct(in[i], student_float_to_half(in[i]), want[i])) {
#pragma omp critical
          if (base + i < first_bad) first_bad = base + i;
          break;
        }
      }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (first_bad != UINT64_MAX) {
    float x = float_of(uint32_t(first_bad));
    std::printf("  FAIL  every float32 bit pattern\n");
    report_failure(x, student_float_to_half(x), hg::float_to_half_bits(x));
    std::printf("\nNot yet: fix this case in exercise.cpp and run ./lab check 04 again.\n");
    return 1;
  }
  std::printf("  ok    %-48s (%.1f s)\n", "every float32 bit pattern", seconds);
  std::printf("\nPASS: your conversion gives the same bits as halfgrad's (and the hardware's) for "
              "every float.\n");
  return 0;
}
