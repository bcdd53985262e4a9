#pragma once
// DataLoader: an ImageDataset cut into shuffled batches of Tensors.
//
//   hg::DataLoader loader(train, {/*batch_size=*/128, /*shuffle=*/true, /*drop_last=*/false, /*seed=*/0});
//   for (int epoch = 0; epoch < epochs; ++epoch)
//     for (hg::Batch& b : loader) {                 // one epoch
//       hg::Tensor logits = model(b.images);       // (B, C, H, W) F32
//       hg::Tensor loss = hg::cross_entropy(logits, b.labels);
//       ...
//     }
//
// Shuffling: epoch e visits the images in a permutation drawn by Fisher–Yates from a
// generator seeded with (seed, e) alone. So the whole state of a loader is three integers
// — seed, epoch, position in the epoch — and a loader restored from them (a checkpoint)
// yields exactly the batches the original would have: resuming is bit-for-bit.
//
// The loader holds a reference to the dataset: the dataset must outlive it.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/image_dataset.h"
#include "framework/tensor/tensor.h"

namespace hg {

// Each batch gets fresh tensors (no buffer is reused): the autograd graph of the previous
// step may still hold the last batch's images.
struct Batch {
  Tensor images;                // (B, C, H, W) F32, on the CPU
  std::vector<int32_t> labels;  // (B) class ids: what cross_entropy takes
  Tensor targets;               // (B) F32 holding the same class ids, for ops that want a Tensor
  std::vector<int64_t> indices; // (B) which dataset images these are
  int64_t epoch = 0, index = 0; // which epoch, and which batch of it (0-based)
  int64_t size() const { return int64_t(labels.size()); }
};

struct DataLoaderOptions {
  int64_t batch_size = 128;
  bool shuffle = true;      // false: images in dataset order every epoch
  bool drop_last = false;   // true: skip a last batch smaller than batch_size
  uint64_t seed = 0;
};

struct LoaderState {
  uint64_t seed = 0;
  int64_t epoch = 0;     // the epoch being (or about to be) read
  int64_t position = 0;  // images of that epoch already handed out
};

class DataLoader {
 public:
  DataLoader(const data::ImageDataset& dataset, DataLoaderOptions options);
  // A temporary dataset would be destroyed while the loader still points at it: refused.
  DataLoader(data::ImageDataset&&, DataLoaderOptions) = delete;

  // The next batch of the current epoch into `out`; false at the end of the epoch, and the
  // loader moves on to the next epoch (so a following call starts it).
  bool next(Batch& out);

  int64_t batches_per_epoch() const;
  int64_t epoch() const { return epoch_; }
  int64_t position() const { return position_; }
  const DataLoaderOptions& options() const { return opt_; }
  const data::ImageDataset& dataset() const { return ds_; }
  // The order in which the current epoch visits the dataset (N indices).
  const std::vector<int64_t>& order() const { return order_; }

  // Everything needed to continue exactly where this loader is.
  LoaderState state() const { return {opt_.seed, epoch_, position_}; }
  void set_state(const LoaderState& s);
  nlohmann::json state_json() const;  // {"seed": .., "epoch": .., "position": .., "n": images}
  // Throws std::invalid_argument on a missing or bad field, a negative epoch or position, a
  // position past the end, or a state saved for a dataset of another size ("n"; a state
  // without it, from an older checkpoint, is taken as it is). `source` (the checkpoint's
  // file) starts the message when given.
  void set_state_json(const nlohmann::json& j, const std::string& source = "");
  // The checks of set_state_json alone; changes nothing.
  void check_state_json(const nlohmann::json& j, const std::string& source = "") const;

  // Range-for over the rest of the current epoch.
  class Iterator {
   public:
    Iterator(DataLoader* loader, bool at_end);
    Batch& operator*() { return batch_; }
    Batch* operator->() { return &batch_; }
    Iterator& operator++();
    bool operator!=(const Iterator& other) const { return done_ != other.done_; }

   private:
    DataLoader* loader_;
    Batch batch_;
    bool done_;
  };
  Iterator begin() { return Iterator(this, false); }
  Iterator end() { return Iterator(this, true); }

 private:
  void make_order();  // order_ for epoch_

  const data::ImageDataset& ds_;
  DataLoaderOptions opt_;
  int64_t epoch_ = 0, position_ = 0;
  std::vector<int64_t> order_;
};

// The permutation of 0..n-1 that epoch `epoch` of a loader seeded `seed` uses.
std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch);

}  // namespace hg
