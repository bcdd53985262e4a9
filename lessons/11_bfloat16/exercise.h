#pragma once
// Chapter 11 exercise: BF16 — its rounding, and a run it survives where F16 does not.
//
// 1. student_float_to_bf16(x): the bits of the BF16 value nearest to x (round to nearest,
//    ties to even), ±0, ±inf, subnormals, and NaN staying NaN. BF16 is the top half of an
//    FP32: 1 sign | 8 exponent (bias 127) | 7 mantissa.
//
// 2. student_bf16_wins(): the settings of a run of chapter 11's program (the MLP on 5000
//    FashionMNIST images, one epoch, batch 128, momentum 0) in which F16 AMP — autocast
//    with a GradScaler — loses at least one step in eight to overflow (a step its scaler
//    skips, or an inf/NaN loss), while BF16 autocast, with no scaler, trains: every loss
//    finite, a test accuracy of at least 0.5, and at least 0.02 above F16's. `./lab lesson 11 --runs amp_f16,amp_bf16
//    --input-scale K --lr LR --momentum 0 --limit-train 5000` runs the same experiment.
//
// exercise.cpp is yours; `./lab check 11` grades both.
#include <cstdint>

uint16_t student_float_to_bf16(float x);

struct Bf16Run {
  double input_scale;  // the images are multiplied by this (the program's --input-scale)
  double lr;           // SGD's learning rate (--lr)
};
Bf16Run student_bf16_wins();
