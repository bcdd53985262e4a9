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
  // An empty set would make every epoch end before it starts: a run that "trains" on
  // nothing and reports an accuracy of 0/0.
  if (ds_.n == 0) throw std::invalid_argument("DataLoader: the dataset has no images");
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
  // "n": the dataset's size, so a state is never applied to another dataset (the same seed
  // shuffles 1000 images and 60000 images differently: the resumed run would not be the run).
  return {{"seed", opt_.seed}, {"epoch", epoch_}, {"position", position_}, {"n", ds_.n}};
}

void DataLoader::check_state_json(const nlohmann::json& j, const std::string& source) const {
  const std::string where = source.empty() ? "DataLoader state" : source + ": loader state";
  if (!j.is_object()) throw std::invalid_argument(fmt::format("{} is not a JSON object: {}", where, j.dump()));
  for (const char* key : {"seed", "epoch", "position"})
    if (!j.contains(key) || !j[key].is_number_integer())
      throw std::invalid_argument(fmt::format("{}: field '{}' missing or not an integer in {}", where, key,
                                              j.dump()));
  if (!j["seed"].is_number_unsigned() && j["seed"].get<int64_t>() < 0)
    throw std::invalid_argument(fmt::format("{}: seed {} is negative", where, j["seed"].dump()));
  const int64_t epoch = j["epoch"].get<int64_t>(), position = j["position"].get<int64_t>();
  if (epoch < 0 || position < 0)
    throw std::invalid_argument(fmt::format("{}: epoch {} and position {} must be >= 0", where, epoch, position));
  if (j.contains("n") && !(j["n"].is_number_integer() && j["n"].get<int64_t>() == ds_.n))
    throw std::invalid_argument(fmt::format("{}: saved for a dataset of {} images, this one has {} "
                                            "(another --limit-train or dataset?)", where, j["n"].dump(), ds_.n));
  if (position > ds_.n)
    throw std::invalid_argument(fmt::format("{}: position {} is past the end of the dataset ({} images)",
                                            where, position, ds_.n));
}

void DataLoader::set_state_json(const nlohmann::json& j, const std::string& source) {
  check_state_json(j, source);
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
