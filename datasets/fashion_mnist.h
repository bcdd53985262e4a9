#pragma once
// FashionMNIST (Zalando): 28×28 grey images of clothing, 10 classes, 60000 train + 10000 test.
//
// The folder (see paths.h: --data, then $HG_DATA, then /usr/share/datasets/fashion-mnist from
// Debian's dataset-fashion-mnist) holds four IDX files, gzipped or not:
//   train-images-idx3-ubyte(.gz)  (60000, 28, 28) u8     train-labels-idx1-ubyte(.gz)  (60000) u8
//   t10k-images-idx3-ubyte(.gz)   (10000, 28, 28) u8     t10k-labels-idx1-ubyte(.gz)   (10000) u8
// The names with '.' before "idx" (train-images.idx3-ubyte), as some archives unpack, work too.
#include <array>
#include <cstdint>
#include <string>

#include "datasets/image_dataset.h"

namespace hg::data {

// FashionMNIST's training-set pixel statistics for pixels in [0, 1] (chapter 02 normalises
// with them: x ← (x − 0.2860) / 0.3530).
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

const std::array<const char*, 10>& fashion_mnist_class_names();

// Loads the train (60000) or test (10000) split from `dir` with pixels scaled to [0, 1]
// (u8 / 255). `limit` > 0 keeps only the first `limit` images (the files are still checked
// in full). Both files' headers are checked (shapes, counts, N ≥ 1, the limits of idx.h,
// the files' sizes) before any pixel is read. Throws std::runtime_error:
//   - folder or file missing: names the path tried, the package to install
//     (`apt-get install dataset-fashion-mnist` or `./lab setup`) and how to point elsewhere
//     (--data DIR, HG_DATA=DIR);
//   - a folder, FIFO or device where a file should be: names it and what it is;
//   - bad contents (magic, dimensions, 0 images, short data, bad gzip, labels ≥ 10, image
//     and label counts that disagree): names the file and the byte offset.
ImageDataset load_fashion_mnist(const std::string& dir, bool train, int64_t limit = -1);

// The path of one of the four files in `dir` (e.g. stem "train-images-idx3-ubyte"), trying
// "<stem>.gz", "<stem>" and the dotted variants; "" when none exists. A name that exists
// but is not a file (a folder, a FIFO) is returned too: reading it says what it is.
std::string find_idx_file(const std::string& dir, const std::string& stem);

}  // namespace hg::data
