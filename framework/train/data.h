#pragma once
// FashionMNIST as every training chapter uses it: the first N images of each set, centred
// and scaled with the training set's statistics, (x − 0.2860) / 0.3530 (chapter 02).
#include <cstdint>
#include <string>

#include "datasets/image_dataset.h"

namespace hg::train {

struct FashionMnist {
  std::string dir;             // where it was read from
  data::ImageDataset train, test;
};

// `data_flag` is --data ("" = $HG_DATA, then the Debian package's folder); a limit of -1
// takes the whole set. Throws std::runtime_error naming the file when one is missing or damaged.
FashionMnist load_fashion_mnist_normalized(const std::string& data_flag, int64_t limit_train, int64_t limit_test);

}  // namespace hg::train
