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

void normalize(ImageDataset& ds, const std::vector<float>& mean, const std::vector<float>& std) {
  if (int64_t(mean.size()) != ds.channels || int64_t(std.size()) != ds.channels)
    throw std::invalid_argument(fmt::format("normalize: {} means and {} stds for {} channels",
                                            mean.size(), std.size(), ds.channels));
  const int64_t hw = ds.height * ds.width;
  for (int64_t c = 0; c < ds.channels; ++c)
    if (!(std[size_t(c)] > 0.0f))
      throw std::invalid_argument(fmt::format("normalize: std of channel {} must be > 0, got {}", c, std[size_t(c)]));
  for (int64_t i = 0; i < ds.n; ++i)
    for (int64_t c = 0; c < ds.channels; ++c) {
      float* x = ds.images.data() + (i * ds.channels + c) * hw;  // (H, W) plane of image i
      const float m = mean[size_t(c)], inv = 1.0f / std[size_t(c)];
      for (int64_t p = 0; p < hw; ++p) x[p] = (x[p] - m) * inv;
    }
}

std::vector<MeanStd> channel_mean_std(const ImageDataset& ds) {
  const int64_t hw = ds.height * ds.width;
  std::vector<MeanStd> out;
  for (int64_t c = 0; c < ds.channels; ++c) {
    double sum = 0.0, sum_sq = 0.0;
    for (int64_t i = 0; i < ds.n; ++i) {
      const float* x = ds.images.data() + (i * ds.channels + c) * hw;
      for (int64_t p = 0; p < hw; ++p) {
        sum += x[p];
        sum_sq += double(x[p]) * x[p];
      }
    }
    const double count = double(ds.n * hw);
    const double mean = count > 0 ? sum / count : 0.0;
    out.push_back({mean, count > 0 ? std::sqrt(std::max(0.0, sum_sq / count - mean * mean)) : 0.0});
  }
  return out;
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
