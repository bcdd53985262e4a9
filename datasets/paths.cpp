#include "datasets/paths.h"

#include <cstdlib>

namespace hg::data {

std::string fashion_mnist_dir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("HG_DATA"); env && *env) return env;
  return kDebianFashionMnistDir;
}

std::string fashion_mnist_dir_source(const std::string& flag) {
  if (!flag.empty()) return "--data";
  if (const char* env = std::getenv("HG_DATA"); env && *env) return "HG_DATA";
  return "default";
}

}  // namespace hg::data
