#include "datasets/image_dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hg::data {

void normalize(ImageDataset& ds, float mean, float std) {
  if (!(std > 0.0f))
    throw std::invalid_argument(fmt::format("normalize: std must be > 0, got {}", std));
  const float inv = 1.0f / std;
  for (float& x : ds.images) x = (x - mean) * inv;
}

MeanStd pixel_mean_std(const ImageDataset& ds) {
  if (ds.images.empty()) return {0.0, 0.0};
  double sum = 0.0, sum_sq = 0.0;
  for (float x : ds.images) {
    sum += x;
    sum_sq += double(x) * x;
  }
  const double n = double(ds.images.size());
  const double mean = sum / n;
  return {mean, std::sqrt(std::max(0.0, sum_sq / n - mean * mean))};
}

void check_consistent(const ImageDataset& ds, const std::string& what) {
  if (ds.n < 0 || ds.channels <= 0 || ds.height <= 0 || ds.width <= 0)
    throw std::runtime_error(fmt::format("{}: bad image shape ({}, {}, {}, {})", what, ds.n,
                                         ds.channels, ds.height, ds.width));
  if (int64_t(ds.images.size()) != ds.n * ds.image_size())
    throw std::runtime_error(fmt::format("{}: {} floats of pixels, expected N·C·H·W = {}", what,
                                         ds.images.size(), ds.n * ds.image_size()));
  if (int64_t(ds.labels.size()) != ds.n)
    throw std::runtime_error(
        fmt::format("{}: {} labels for {} images", what, ds.labels.size(), ds.n));
  if (ds.num_classes <= 0 || int(ds.class_names.size()) != ds.num_classes)
    throw std::runtime_error(fmt::format("{}: {} class names for {} classes", what,
                                         ds.class_names.size(), ds.num_classes));
  for (int64_t i = 0; i < ds.n; ++i)
    if (ds.labels[i] < 0 || ds.labels[i] >= ds.num_classes)
      throw std::runtime_error(fmt::format("{}: label {} of image {} is outside [0, {})", what,
                                           ds.labels[i], i, ds.num_classes));
}

}  // namespace hg::data
