#pragma once
// An image-folder dataset: one subfolder per class, images inside, read with stb_image.
//
//   flowers/            class names are the subfolder names, sorted; class id = position
//     daisy/ 001.png    image files are taken in sorted name order (so the order, and any
//     rose/  a.jpg      seeded shuffle after it, is the same on every machine)
//
// Formats: whatever stb_image reads (PNG, JPEG, BMP, GIF, TGA, PNM, PSD, HDR) selected by
// extension; other files and dot-files are ignored. Pixels become floats in [0, 1].
// Sizes: by default every image must have the first image's height, width and channel
// count (an error names the first file that differs). Set `height`/`width` to resize every
// image to that size instead (stb_image_resize, a Mitchell/Catmull-Rom filter), and
// `channels` to convert every image to grey (1) or RGB (3) as stb_image loads it.
// Limits: each image's header is read (stbi_info) before it is decoded, and an image larger
// than 4096×4096 is refused, as is a folder of more than 2^24 images (idx.h has the same).
#include <cstdint>
#include <string>

#include "datasets/image_dataset.h"

namespace hg::data {

inline constexpr int kImageFolderMaxSide = 4096;
inline constexpr int64_t kImageFolderMaxImages = int64_t(1) << 24;

struct ImageFolderOptions {
  int channels = 0;             // 0: as the first image; 1..4: converted on load
  int height = 0, width = 0;    // 0: require equal sizes; > 0: resize to height × width
  int64_t limit_per_class = -1; // > 0: keep only the first files of each class
};

ImageDataset load_image_folder(const std::string& dir, const ImageFolderOptions& options = {});

}  // namespace hg::data
