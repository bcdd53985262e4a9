#pragma once
// Where datasets live. Order: an explicit --data path, then $HG_DATA, then Debian's
// dataset-fashion-mnist package (/usr/share/datasets/fashion-mnist).
#include <string>

namespace hg::data {

inline constexpr const char* kDebianFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Returns the folder to read FashionMNIST from; `flag` is the --data value ("" if not given).
std::string fashion_mnist_dir(const std::string& flag);

// Where that folder came from, for error messages: "--data", "HG_DATA" or "default".
std::string fashion_mnist_dir_source(const std::string& flag);

}  // namespace hg::data
