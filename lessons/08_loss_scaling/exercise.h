#pragma once
// Chapter 08 exercise: choose a static loss scale from a gradient histogram.
//
// hg::amp::GradHistogram (framework/amp/grad_stats.h) is what a grad_hist event of the run
// log holds about the gradients of one backward pass:
//   counts[i]    finite non-zero values whose binary exponent floor(log2|x|) is exp_min + i
//                (exp_min = -40 ... exp_max = 16), i.e. |x| in [2^(exp_min+i), 2^(exp_min+i+1))
//   below/above  finite non-zero values under 2^exp_min / at or over 2^(exp_max+1)
//   zeros, inf, nan
//   scale        the loss scale the pass ran with (a power of two; 1 when none): the values
//                x counted are scale·g, g being the true gradient
//
// choose_loss_scale(h, headroom): the largest power of two S such that, had backward run
// on loss·S, no gradient of this histogram could become inf in F16 — even if the gradients
// grew by a factor 2^headroom. When the histogram cannot tell how large the gradients are
// (some are inf or NaN, some are above the window, or there is no finite non-zero one),
// return 0.
//
// fraction_underflowing(h, S): of the finite non-zero gradients, the fraction that would
// still be below F16's smallest subnormal, |S·g| < 2^-24, had backward run on loss·S.
// Count the `below` ones as underflowing. (Assume S is a power of two.)
//
// exercise.cpp is yours; `./lab check 08` grades it.
#include "framework/amp/grad_stats.h"

float choose_loss_scale(const hg::amp::GradHistogram& h, int headroom);
double fraction_underflowing(const hg::amp::GradHistogram& h, float S);
