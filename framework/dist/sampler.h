#pragma once
// framework/dist/sampler.h — which examples each rank trains on.
//
// One process with batch size B reads, in epoch e, the permutation P = shuffled_order(n,
// seed, e) (framework/data/loader.h) in global batches P[s·B, (s+1)·B). N ranks read the same
// global batches: rank k takes every N-th index of each, starting at k (PyTorch's
// DistributedSampler deals a shuffled epoch out the same way):
//
//   global batch s      P[s·B] P[s·B+1] P[s·B+2] P[s·B+3] ...       B = 8, N = 2
//   rank 0              P[s·B]          P[s·B+2]          ...       4 examples
//   rank 1                     P[s·B+1]          P[s·B+3] ...       4 examples
//
// So every example is used exactly once per epoch, by one rank, in the same global batch as
// in single-process training: N ranks train on the same batches as one process would.
// Every rank shuffles with the same seed and needs no message to agree on P.
//
// The last global batch of an epoch may hold fewer than B examples, and then the ranks
// fewer than B/N each, unequally (b_k examples on rank k). The gradient wanted is that of
// the global batch's mean loss, Σ ℓ_i / B_s; averaging the ranks' gradients of their mean
// losses gives it only when every b_k is B_s / N. loss_weight() is the factor N·b_k / B_s
// that makes it so for any split: weighted, the ranks' average is the global mean exactly
// (the weight is 1 whenever the split is even). A rank with no example in a step
// (b_k = 0) still takes part in the step's allreduce, with zero gradients.
//
// Text (chapter 12's GPT). There are no epochs: global batch s is random_batch(tokens, B, T,
// seed, s) (datasets/text.h), B windows drawn by a generator seeded with (seed, s) alone, so
// every rank draws the same B windows without a message. DistributedTextSampler deals them as
// the images are dealt: rank k takes windows k, k+N, k+2N, ... of each global batch, so each
// window is trained on by exactly one rank, and loss_weight() is the same N·b_k / B.
//
//   global batch s      w0 w1 w2 w3 w4 w5 w6                          B = 7, N = 2
//   rank 0              w0    w2    w4    w6       4 windows, weight 2·4/7
//   rank 1                 w1    w3    w5          3 windows, weight 2·3/7
#include <cstdint>
#include <vector>

#include "datasets/image_dataset.h"
#include "datasets/text.h"
#include "framework/data/loader.h"

namespace hg::dist {

class DistributedSampler {
 public:
  // n examples, global batch `batch_size` (all ranks together), this rank of world_size.
  DistributedSampler(int64_t n, int64_t batch_size, int rank, int world_size, uint64_t seed, bool shuffle = true);

  int64_t steps_per_epoch() const { return (n_ + batch_ - 1) / batch_; }  // global batches
  int64_t global_batch_size(int64_t step) const;                          // B_s (B except maybe the last)
  // The dataset indices this rank uses in `step` of `epoch` (b_k of them, maybe none).
  std::vector<int64_t> indices(int64_t epoch, int64_t step) const;
  // N·b_k / B_s: the factor for this rank's mean loss (see above); 1 for an even split.
  double loss_weight(int64_t epoch, int64_t step) const;

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  int64_t batch_size() const { return batch_; }

 private:
  const std::vector<int64_t>& order(int64_t epoch) const;

  int64_t n_, batch_;
  int rank_, world_;
  uint64_t seed_;
  bool shuffle_;
  mutable int64_t cached_epoch_ = -1;  // the permutation of the last epoch asked for
  mutable std::vector<int64_t> cached_order_;
};

class DistributedTextSampler {
 public:
  // Windows of T + 1 tokens from `tokens` (kept by reference: it must outlive the sampler),
  // global batch `batch_size` windows (all ranks together), this rank of world_size.
  DistributedTextSampler(const std::vector<int32_t>& tokens, int64_t batch_size, int64_t T, int rank,
                         int world_size, uint64_t seed);

  // This rank's windows of global batch `step`, in their order in it: b_k × T inputs and targets.
  data::TokenBatch batch(int64_t step) const;
  int64_t rank_batch_size() const;  // b_k: ⌈(B − k) / N⌉, the same every step
  double loss_weight() const;       // N·b_k / B (1 when N divides B)

  int rank() const { return rank_; }
  int world_size() const { return world_; }
  int64_t batch_size() const { return batch_; }

 private:
  const std::vector<int32_t>& tokens_;
  int64_t batch_, T_;
  int rank_, world_;
  uint64_t seed_;
};

// A batch of the given dataset indices, as the DataLoader makes one: images (b, C, H, W)
// F32, labels. b may be 0 (images undefined then).
Batch make_batch(const data::ImageDataset& ds, const std::vector<int64_t>& indices);

}  // namespace hg::dist
