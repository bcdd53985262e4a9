// Chapter 06 exercise — the reference solution.
//
// Around w the F16 numbers are `spacing` apart: 2^(p - 10) in the binade [2^p, 2^(p+1)),
// and 2^-24 below 2^-14 (the subnormals, and 0). w − u stays w when |u| is less than half
// the spacing towards where u points; at exactly half it is a tie, which goes to the even
// mantissa. The one asymmetry: from an exact power of two towards zero the next number is
// in the binade below, where the spacing is half as large (1 − 2^-11 is an F16 number).
#include "lessons/06_fp16_naive/exercise.h"

#include <cmath>

bool update_is_lost(float w, float u) {
  const int min_exponent = -14;  // F16's smallest normal is 2^-14
  const int p = w == 0.0f ? min_exponent : std::max(std::ilogb(w), min_exponent);
  double spacing = std::ldexp(1.0, p - 10);
  const bool toward_zero = w != 0.0f && (w > 0.0f) == (u > 0.0f);  // w − u is nearer 0
  const bool power_of_two = std::fabs(w) == std::ldexp(1.0, p);
  if (toward_zero && power_of_two && p > min_exponent) spacing /= 2;
  const double half = spacing / 2, step = std::fabs(double(u));
  if (step != half) return step < half;
  // A tie: w wins when its last mantissa bit is 0, i.e. w is an even multiple of its ulp.
  const double units = std::fabs(w) / std::ldexp(1.0, p - 10);
  return std::fmod(units, 2.0) == 0.0;
}
