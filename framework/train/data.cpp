#include "framework/train/data.h"

#include "datasets/fashion_mnist.h"
#include "datasets/paths.h"

namespace hg::train {

FashionMnist load_fashion_mnist_normalized(const std::string& data_flag, int64_t limit_train, int64_t limit_test) {
  FashionMnist d;
  d.dir = data::fashion_mnist_dir(data_flag);
  d.train = data::load_fashion_mnist(d.dir, true, limit_train);
  d.test = data::load_fashion_mnist(d.dir, false, limit_test);
  // Inputs near zero mean and unit variance keep the first layer's pre-activations in the
  // range the PyTorch-style initialisation assumes; the test set gets the training set's numbers.
  data::normalize(d.train, data::kFashionMnistMean, data::kFashionMnistStd);
  data::normalize(d.test, data::kFashionMnistMean, data::kFashionMnistStd);
  return d;
}

}  // namespace hg::train
