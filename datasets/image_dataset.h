#pragma once
// ImageDataset: a whole labelled image set in memory, as floats.
//
// Legend: N images, C channels, H height, W width.
//   images  (N, C, H, W) row-major floats, pixels in [0, 1] as loaded (until normalize)
//   labels  (N)          class ids in [0, num_classes)
// Every loader in datasets/ returns one of these; framework/data/loader.h batches it into
// Tensors. Nothing here depends on the framework.
#include <cstdint>
#include <string>
#include <vector>

namespace hg::data {

struct ImageDataset {
  int64_t n = 0, channels = 0, height = 0, width = 0;
  std::vector<float> images;         // (N, C, H, W)
  std::vector<int32_t> labels;       // (N)
  int num_classes = 0;
  std::vector<std::string> class_names;  // num_classes names, for printed tables

  int64_t image_size() const { return channels * height * width; }  // C·H·W floats per image
  const float* image(int64_t i) const { return images.data() + i * image_size(); }
};

// x ← (x − mean) / std for every pixel. FashionMNIST's training-set statistics are
// mean 0.2860, std 0.3530 (pixels in [0, 1]); chapter 02 uses those for train and test.
void normalize(ImageDataset& ds, float mean, float std);
// Per channel, for colour images: channel c ← (x − mean[c]) / std[c]; one value per channel.
void normalize(ImageDataset& ds, const std::vector<float>& mean, const std::vector<float>& std);

struct MeanStd { double mean, std; };
// Mean and (population) standard deviation over every pixel of every image, in double.
MeanStd pixel_mean_std(const ImageDataset& ds);
// The same for each channel separately (C entries).
std::vector<MeanStd> channel_mean_std(const ImageDataset& ds);

// Checks sizes and label ranges agree; throws naming `what` when they do not.
void check_consistent(const ImageDataset& ds, const std::string& what);

}  // namespace hg::data
