#include "datasets/synthetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hg::data {

namespace {
// SplitMix64: a tiny, well-mixed generator with a fixed definition (Steele et al., 2014).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1), 53 random bits
  int below(int k) { return int(uniform() * k); }                  // 0..k-1
  // Box-Muller: two uniforms → one standard normal (the second one is dropped, for simplicity).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1], so log is finite
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);  // 2π·u2
  }
};
}  // namespace

ImageDataset make_synthetic(const SyntheticOptions& o) {
  if (o.n < 0 || o.num_classes < 2 || o.channels < 1 || o.height < 4 || o.width < 4)
    throw std::invalid_argument(fmt::format(
        "make_synthetic: need n ≥ 0, ≥ 2 classes, ≥ 1 channel and images ≥ 4x4; got n={} "
        "classes={} {}x{}x{}", o.n, o.num_classes, o.channels, o.height, o.width));
  ImageDataset ds;
  ds.n = o.n;
  ds.channels = o.channels;
  ds.height = o.height;
  ds.width = o.width;
  ds.num_classes = o.num_classes;
  for (int k = 0; k < o.num_classes; ++k) ds.class_names.push_back(fmt::format("class{}", k));

  // Prototypes (K, C, H, W): three random bars or blocks per class and channel.
  const int64_t size = ds.image_size();
  std::vector<float> proto(size_t(o.num_classes * size), 0.0f);
  SplitMix64 prng{o.prototype_seed * 0x5851F42D4C957F2Dull + 1};
  for (int k = 0; k < o.num_classes; ++k)
    for (int c = 0; c < o.channels; ++c)
      for (int shape = 0; shape < 3; ++shape) {
        const int y0 = prng.below(o.height - 2), x0 = prng.below(o.width - 2);
        const int h = 1 + prng.below(o.height - y0), w = 1 + prng.below(o.width - x0);
        const bool horizontal = prng.below(2);  // a thin bar, or a block
        const int y1 = horizontal ? std::min(y0 + 2, o.height) : y0 + h;
        const int x1 = horizontal ? x0 + w : std::min(x0 + 2 + w / 2, o.width);
        for (int y = y0; y < y1; ++y)
          for (int x = x0; x < x1; ++x)
            proto[size_t(k * size + (c * o.height + y) * o.width + x)] = 0.9f;
      }

  // Samples: prototype + noise, clamped to [0, 1].
  SplitMix64 rng{o.seed * 0x2545F4914F6CDD1Dull + 7};
  ds.images.resize(size_t(o.n * size));
  ds.labels.resize(size_t(o.n));
  for (int64_t i = 0; i < o.n; ++i) {
    const int k = int(i % o.num_classes);
    ds.labels[i] = k;
    for (int64_t p = 0; p < size; ++p) {
      const float v = proto[size_t(k * size + p)] + o.noise * float(rng.normal());
      ds.images[size_t(i * size + p)] = std::clamp(v, 0.0f, 1.0f);
    }
  }
  return ds;
}

}  // namespace hg::data
