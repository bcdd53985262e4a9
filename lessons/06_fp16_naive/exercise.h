#pragma once
// Chapter 06 exercise: which weight updates vanish in F16.
//
// A weight w is stored in F16. An SGD step computes the update u = lr·g and stores w − u
// rounded to the nearest F16 value (ties to even). When that nearest value is w itself,
// the update is lost: the weight did not move although its gradient was not zero.
//
// update_is_lost(w, u) answers that from the spacing of the F16 numbers around w, without
// rounding anything:
//   w   an F16 value (every F16 value is exactly a float), finite
//   u   a finite float, not zero; w − u is meant exactly (no rounding before F16's)
// exercise.cpp is yours; `./lab check 06` grades it.
bool update_is_lost(float w, float u);
