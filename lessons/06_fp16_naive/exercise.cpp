// Chapter 06 exercise — which updates vanish in F16 (see exercise.h).
//
// The stored weight moves only when w − u is nearer to a neighbour of w than to w. So the
// question is how far apart F16 numbers are around w, and which neighbour u points at:
//   - F16 has 10 mantissa bits: inside one binade [2^p, 2^(p+1)) the numbers are evenly
//     spaced; the spacing doubles from one binade to the next (README of chapter 04,
//     "## 2. Range and precision": the ulp).
//   - the smallest numbers (subnormals, README of chapter 04, "## 3. Subnormals") are
//     evenly spaced all the way down to 0.
//   - a step that lands exactly half way is a tie; ties go to the even neighbour.
//   - w can sit at the edge of its binade, and u can point out of it.
// std::frexp, std::ldexp, std::ilogb and std::fabs (<cmath>) take floats apart without
// rounding anything. Rounding w − u to F16 with halfgrad (hg::half) would answer the
// question without the idea: the checker refuses it.
// Run: ./lab check 06
#include "lessons/06_fp16_naive/exercise.h"

#include <cmath>

bool update_is_lost(float w, float u) {
  // TODO: true when the F16 value nearest to w − u is w itself.
  return false;
}
