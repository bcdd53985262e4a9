#include "framework/data/loader.h"

#include <fmt/format.h>

#include <cstring>
#include <numeric>
#include <stdexcept>

namespace hg {

std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t(0));
  // One generator per (seed, epoch): hash the pair so epochs get unrelated streams.
  Generator mix(seed);
  Generator gen(mix.next_u64() ^ (uint64_t(epoch) * 0xD1B54A32D192ED03ull));
  gen.next_u64();
  // Fisher–Yates: for i from the end, swap element i with a uniform pick from [0, i].
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[size_t(i)], order[gen.randint(uint64_t(i + 1))]);
  return order;
}

DataLoader::DataLoader(const data::ImageDataset& dataset, DataLoaderOptions options)
    : ds_(dataset), opt_(options) {
  if (opt_.batch_size <= 0)
    throw std::invalid_argument(fmt::format("DataLoader: batch_size must be > 0, got {}", opt_.batch_size));
  data::check_consistent(ds_, "DataLoader dataset");
  make_order();
}

void DataLoader::make_order() {
  if (opt_.shuffle) {
    order_ = shuffled_order(ds_.n, opt_.seed, epoch_);
  } else {
    order_.resize(size_t(ds_.n));
    std::iota(order_.begin(), order_.end(), int64_t(0));
  }
}

int64_t DataLoader::batches_per_epoch() const {
  return opt_.drop_last ? ds_.n / opt_.batch_size : (ds_.n + opt_.batch_size - 1) / opt_.batch_size;
}

bool DataLoader::next(Batch& out) {
  const int64_t usable = opt_.drop_last ? batches_per_epoch() * opt_.batch_size : ds_.n;
  if (position_ >= usable) {  // epoch over: move on, and say so
    ++epoch_;
    position_ = 0;
    make_order();
    return false;
  }
  const int64_t B = std::min(opt_.batch_size, usable - position_);
  const int64_t D = ds_.image_size();  // C·H·W
  out.images = Tensor::empty({B, ds_.channels, ds_.height, ds_.width}, DType::F32);
  float* dst = out.images.data<float>();  // (B, C, H, W)
  out.labels.resize(size_t(B));
  out.indices.resize(size_t(B));
  std::vector<float> ids(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t i = order_[size_t(position_ + b)];
    std::memcpy(dst + b * D, ds_.image(i), size_t(D) * sizeof(float));
    out.labels[size_t(b)] = ds_.labels[size_t(i)];
    out.indices[size_t(b)] = i;
    ids[size_t(b)] = float(ds_.labels[size_t(i)]);
  }
  out.targets = Tensor::from_vector(ids, {B}, DType::F32);
  out.epoch = epoch_;
  out.index = position_ / opt_.batch_size;
  position_ += B;
  return true;
}

void DataLoader::set_state(const LoaderState& s) {
  if (s.epoch < 0 || s.position < 0 || s.position > ds_.n)
    throw std::invalid_argument(fmt::format("DataLoader: bad state epoch={} position={} for {} images",
                                            s.epoch, s.position, ds_.n));
  opt_.seed = s.seed;
  epoch_ = s.epoch;
  position_ = s.position;
  make_order();
}

nlohmann::json DataLoader::state_json() const {
  return {{"seed", opt_.seed}, {"epoch", epoch_}, {"position", position_}};
}

void DataLoader::set_state_json(const nlohmann::json& j) {
  for (const char* key : {"seed", "epoch", "position"})
    if (!j.contains(key) || !j[key].is_number_integer())
      throw std::invalid_argument(fmt::format("DataLoader state: field '{}' missing or not an integer in {}",
                                              key, j.dump()));
  set_state({j["seed"].get<uint64_t>(), j["epoch"].get<int64_t>(), j["position"].get<int64_t>()});
}

DataLoader::Iterator::Iterator(DataLoader* loader, bool at_end) : loader_(loader), done_(at_end) {
  if (!done_) done_ = !loader_->next(batch_);
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  done_ = !loader_->next(batch_);
  return *this;
}

}  // namespace hg
