#include "framework/dist/sampler.h"

#include <cstring>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

namespace hg::dist {

DistributedSampler::DistributedSampler(int64_t n, int64_t batch_size, int rank, int world_size, uint64_t seed,
                                       bool shuffle)
    : n_(n), batch_(batch_size), rank_(rank), world_(world_size), seed_(seed), shuffle_(shuffle) {
  if (n <= 0) throw std::invalid_argument("DistributedSampler: the dataset has no examples");
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw std::invalid_argument(fmt::format("DistributedSampler: rank {} of {} is not a rank", rank, world_size));
  if (batch_size < world_size)
    throw std::invalid_argument(fmt::format(
        "DistributedSampler: the global batch ({}) must hold at least one example per rank ({} ranks)",
        batch_size, world_size));
}

const std::vector<int64_t>& DistributedSampler::order(int64_t epoch) const {
  if (epoch != cached_epoch_) {
    if (shuffle_) {
      cached_order_ = shuffled_order(n_, seed_, epoch);
    } else {
      cached_order_.resize(size_t(n_));
      std::iota(cached_order_.begin(), cached_order_.end(), int64_t(0));
    }
    cached_epoch_ = epoch;
  }
  return cached_order_;
}

int64_t DistributedSampler::global_batch_size(int64_t step) const {
  if (step < 0 || step >= steps_per_epoch())
    throw std::out_of_range(fmt::format("DistributedSampler: step {} of an epoch of {}", step, steps_per_epoch()));
  return std::min(batch_, n_ - step * batch_);
}

std::vector<int64_t> DistributedSampler::indices(int64_t epoch, int64_t step) const {
  const std::vector<int64_t>& p = order(epoch);
  const int64_t begin = step * batch_, end = begin + global_batch_size(step);
  std::vector<int64_t> mine;
  for (int64_t i = begin + rank_; i < end; i += world_) mine.push_back(p[size_t(i)]);
  return mine;
}

double DistributedSampler::loss_weight(int64_t epoch, int64_t step) const {
  const int64_t b = int64_t(indices(epoch, step).size()), B = global_batch_size(step);
  return double(world_) * double(b) / double(B);
}

DistributedTextSampler::DistributedTextSampler(const std::vector<int32_t>& tokens, int64_t batch_size, int64_t T,
                                               int rank, int world_size, uint64_t seed)
    : tokens_(tokens), batch_(batch_size), T_(T), rank_(rank), world_(world_size), seed_(seed) {
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw std::invalid_argument(fmt::format("DistributedTextSampler: rank {} of {} is not a rank", rank, world_size));
  if (batch_size < world_size)
    throw std::invalid_argument(fmt::format(
        "DistributedTextSampler: the global batch ({} sequences) must hold at least one sequence per rank ({} ranks)",
        batch_size, world_size));
  if (T < 1 || int64_t(tokens.size()) < T + 1)
    throw std::invalid_argument(fmt::format("DistributedTextSampler: {} tokens cannot hold a window of T + 1 = {}",
                                            tokens.size(), T + 1));
}

int64_t DistributedTextSampler::rank_batch_size() const { return (batch_ - rank_ + world_ - 1) / world_; }

double DistributedTextSampler::loss_weight() const {
  return double(world_) * double(rank_batch_size()) / double(batch_);
}

data::TokenBatch DistributedTextSampler::batch(int64_t step) const {
  // Every rank draws the whole global batch (B windows: cheap, a copy of B·T ids) and keeps
  // every N-th window, starting at its rank.
  const data::TokenBatch global = data::random_batch(tokens_, batch_, T_, seed_, step);
  data::TokenBatch mine;
  mine.T = T_;
  for (int64_t i = rank_; i < batch_; i += world_) {
    mine.x.insert(mine.x.end(), global.x.begin() + i * T_, global.x.begin() + (i + 1) * T_);
    mine.y.insert(mine.y.end(), global.y.begin() + i * T_, global.y.begin() + (i + 1) * T_);
    mine.starts.push_back(global.starts[size_t(i)]);
    ++mine.B;
  }
  return mine;
}

Batch make_batch(const data::ImageDataset& ds, const std::vector<int64_t>& indices) {
  Batch out;
  const int64_t B = int64_t(indices.size()), D = ds.image_size();  // D = C·H·W
  out.indices = indices;
  out.labels.resize(size_t(B));
  if (B == 0) return out;
  out.images = Tensor::empty({B, ds.channels, ds.height, ds.width}, DType::F32);
  float* dst = out.images.data<float>();  // (B, C, H, W)
  std::vector<float> ids(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t i = indices[size_t(b)];
    if (i < 0 || i >= ds.n) throw std::out_of_range(fmt::format("make_batch: index {} of {} examples", i, ds.n));
    std::memcpy(dst + b * D, ds.image(i), size_t(D) * sizeof(float));
    out.labels[size_t(b)] = ds.labels[size_t(i)];
    ids[size_t(b)] = float(ds.labels[size_t(i)]);
  }
  out.targets = Tensor::from_vector(ids, {B}, DType::F32);
  return out;
}

}  // namespace hg::dist
