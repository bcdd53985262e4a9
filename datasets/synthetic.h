#pragma once
// A synthetic image set for tests and quick experiments: learnable in seconds, seeded, and
// the same on every machine (its own small generator, no std:: distributions, whose output
// differs between standard libraries).
//
// Each class k has a prototype image: a few bright axis-aligned bars and blocks on a dark
// background, drawn from the seed. A sample of class k is its prototype plus Gaussian noise
// of standard deviation `noise`, clamped to [0, 1]. With the default noise a linear
// classifier separates the classes well above 90%; raise `noise` for a harder set.
#include <cstdint>

#include "datasets/image_dataset.h"

namespace hg::data {

struct SyntheticOptions {
  int64_t n = 1024;          // images
  int num_classes = 4;
  int channels = 1, height = 12, width = 12;
  float noise = 0.25f;       // std of the pixel noise
  uint64_t seed = 0;         // prototypes and samples both come from it
  uint64_t prototype_seed = 0;  // prototypes alone; a train and a test set share it
};

// Labels cycle 0, 1, ..., K-1, 0, 1, ... so every class has n/K (±1) images.
// The class names are "class0", "class1", ...
ImageDataset make_synthetic(const SyntheticOptions& options = {});

}  // namespace hg::data
