#pragma once
// Gradient statistics: where a parameter's gradient values sit against FP16's range.
//
// For one parameter it records (the grad_hist event of docs/run-log.md):
//   counts[i]       finite non-zero values with floor(log2|g|) = exp_min + i  (2^-40 .. 2^16)
//   below / above   finite non-zero values outside that window
//   zeros           exact zeros
//   fp16_underflow  0 < |g| < 2^-24            below FP16's smallest subnormal: rounded to 0
//                                              (at most 2^-25) or up to 2^-24
//   fp16_subnormal  2^-24 <= |g| < 2^-14       FP16 keeps them with fewer than 11 bits
//   fp16_overflow   finite |g| > 65504         FP16 turns these into inf
//   inf, nan
//   dtype           (optional) the format the values were held in when counted: "f16", "bf16",
//                   "f32", "f64". F16 values never lie below 2^-24: what underflowed is
//                   already 0, counted in `zeros`, and fp16_underflow stays 0.
//   lost_update_fraction  (optional) of the elements whose update is not zero, the fraction
//                   that rounding erases: w + lr·update rounds back to w in the weight's
//                   storage format (|lr·update| at or below half an ULP of w). 2048 + 1 = 2048.
//
// The FP16 limits come from kFP16 (framework/dtype), never from constants written here.
// This file works on plain float arrays; grad_stats_logger.h applies it to a model's
// parameters (and fills in dtype from their gradients).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/dtype/float_format.h"

namespace hg::amp {

// floor(log2|x|) for a finite non-zero x, exact (read from the float's exponent field;
// subnormal floats are counted from their leading mantissa bit).
int binary_exponent(float x);

struct GradHistogram {
  std::string param;
  double scale = 1.0;  // the loss scale the gradient carries (1 when none)
  int exp_min = -40, exp_max = 16;
  std::vector<int64_t> counts = std::vector<int64_t>(57, 0);  // exp_max - exp_min + 1 bins
  int64_t below = 0, above = 0, zeros = 0;
  int64_t fp16_underflow = 0, fp16_subnormal = 0, fp16_overflow = 0;
  int64_t inf = 0, nan = 0, total = 0;
  std::string dtype;  // "f16", "bf16", "f32", "f64"; empty: not known (left out of the event)
  double lost_update_fraction = -1.0;  // < 0: not measured (left out of the event)

  GradHistogram() = default;
  GradHistogram(std::string param_name, double loss_scale, int exp_min = -40, int exp_max = 16);

  // Adds n gradient values (as they came out of backward, scale included).
  void add(const float* g, int64_t n);

  // The grad_hist event of docs/run-log.md for this optimizer step.
  nlohmann::json to_event(int64_t step) const;
};

// Whether adding `delta` to `w` leaves w unchanged once rounded to `storage`
// (round to nearest, ties to even). w must be representable in `storage`.
// Uses only the format's fields: the spacing of representable values around w is
// 2^(max(e, min_exponent) - mantissa_bits), halved when moving down across a power of two.
bool update_is_lost(double w, double delta, const FloatFormat& storage);

// Of the elements with delta != 0, the fraction whose update is lost. 0 when none moves.
double lost_update_fraction(const float* w, const float* delta, int64_t n,
                            const FloatFormat& storage);

}  // namespace hg::amp
