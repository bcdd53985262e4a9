#include "framework/nn/init.h"

#include <cmath>

namespace hg::nn::init {

Tensor default_uniform(const Shape& shape, int64_t fan_in, Generator& gen) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return Tensor::uniform(shape, -bound, bound, gen);
}

Tensor kaiming_normal_fan_out(const Shape& shape, int64_t fan_out, Generator& gen) {
  return normal(shape, std::sqrt(2.0 / static_cast<double>(fan_out)), gen);
}

Tensor normal(const Shape& shape, double std_dev, Generator& gen) {
  const float std = static_cast<float>(std_dev);
  Tensor t = Tensor::randn(shape, gen);  // N(0, 1), then scaled in place
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] *= std;
  return t;
}

}  // namespace hg::nn::init
