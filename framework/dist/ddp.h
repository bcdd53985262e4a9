#pragma once
// framework/dist/ddp.h — data-parallel training as PyTorch's DistributedDataParallel does it.
//
// Every rank holds the whole model and trains on its own part of each global batch
// (sampler.h). One step:
//
//   1. forward and backward on this rank's examples        gradients g_k, different per rank
//   2. allreduce(avg) of the gradients                      every rank: ḡ = (g_0 + ... + g_{N-1}) / N
//   3. the same optimizer step on every rank                the replicas stay identical
//
// Step 3 keeps the replicas identical only if they started identical: the constructor
// broadcasts rank 0's parameters (and buffers) to every rank.
//
// Buckets. One allreduce per parameter would pay the latency of a message hundreds of times
// a step; one allreduce of everything could only start after backward ends. DDP packs the
// gradients into buckets of about `bucket_mb` MiB, in the reverse order of the parameters
// (backward produces the last layer's gradients first), and starts a bucket's allreduce as
// soon as its last gradient is ready (autograd's GradReadyHook, backward.h) while
// backward computes the earlier layers. Buckets are started in a fixed order, 0, 1, 2, ...,
// on every rank: collectives must be issued in the same order by all ranks, and a bucket
// whose gradients happen to be ready early waits for the ones before it. The buckets that
// start once the last gradient is in have nothing left to overlap with: they use the
// blocking allreduce, the faster one (ddp.cpp, launch_ready_buckets).
//
//   MLP, bucket_mb = 1   fc1.weight  fc1.bias fc2.weight fc2.bias fc3.weight fc3.bias
//   bucket 0                         [fc1.bias fc2.weight fc2.bias fc3.weight fc3.bias]  0.5 MiB
//   bucket 1             [fc1.weight]          1.5 MiB: more than the cap, alone
//
// Here nothing overlaps: bucket 0 holds fc1.bias, whose gradient comes with fc1.weight's in
// the last layer backward reaches, so both buckets are ready only at the end. (PyTorch
// re-packs its buckets after the first step in the order the gradients arrived.) In
// chapter 12's GPT the first of its two buckets starts while backward is still running.
//
// Gradients live in the buckets. The constructor makes each parameter's .grad a view of its
// slot in its bucket's flat buffer (PyTorch's gradient_as_bucket_view=True), so backward
// accumulates straight into what the allreduce sends, and the average lands where the
// optimizer reads it: no copy into the bucket before the allreduce, none back after. If
// something replaces a .grad with a tensor of its own, that bucket copies it in, and the
// view is put back when the average is ready.
//
// Gradient accumulation: under no_sync() backward only accumulates into .grad; the first K−1
// micro-batches of an accumulated step run under it, the K-th syncs the sum.
//
//   hg::dist::DistributedDataParallel ddp(*model, comm, {.bucket_mb = 1});
//   for each step:
//     opt.zero_grad();
//     ddp.backward(loss);      // returns with .grad averaged over the ranks
//     opt.step();
//
// A rank with no example in a step (the tail of an epoch, sampler.h) calls backward with an
// undefined loss: it adds nothing but takes part in every allreduce. A parameter without a
// gradient counts as zeros.
#include <cstdint>
#include <vector>

#include "framework/amp/grad_scaler.h"
#include "framework/dist/communicator.h"
#include "framework/nn/module.h"

namespace hg::dist {

struct DDPOptions {
  double bucket_mb = 1.0;  // bucket capacity in MiB (PyTorch's bucket_cap_mb defaults to 25)
};

// The buckets for parameters of these byte sizes (in the model's order): indices into the
// list, last parameter first, a new bucket whenever adding one more would pass cap_bytes (a
// parameter larger than the cap gets a bucket of its own).
std::vector<std::vector<size_t>> assign_buckets(const std::vector<int64_t>& param_bytes, int64_t cap_bytes);

class DistributedDataParallel {
 public:
  // Broadcasts rank 0's parameters and buffers; checks every rank has the same model size.
  DistributedDataParallel(nn::Module& model, Communicator& comm, DDPOptions options = {});

  // Backward from `loss` (undefined: no example here), with the buckets' allreduces started
  // as their gradients become ready. Returns when every .grad holds the average over the
  // ranks; under no_sync(), after backward alone.
  void backward(const Tensor& loss);

  // RAII: while one lives, backward() does not communicate.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp) : ddp_(ddp), previous_(ddp.sync_) { ddp.sync_ = false; }
    ~NoSync() { ddp_.sync_ = previous_; }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  NoSync no_sync() { return NoSync(*this); }

  struct Bucket {
    std::vector<size_t> params;    // indices into parameters(), in packing order
    std::vector<int64_t> offsets;  // where each parameter's gradient starts in `flat`
    Tensor flat;                   // (numel) the gradients side by side, the allreduce's buffer
    std::vector<Tensor> views;     // parameter params[i]'s slot of `flat`, in its shape: its .grad
    int pending = 0;               // gradients still to come in this backward
    Work work;
  };
  const std::vector<Bucket>& buckets() const { return buckets_; }
  const std::vector<Tensor>& parameters() const { return params_; }
  // Over all backward() calls: how many buckets started while gradients were still to come
  // (non-blocking: they overlap the rest of backward), and how many once every gradient was
  // there (blocking: nothing left to overlap with).
  int64_t started_during_backward() const { return started_during_; }
  int64_t started_after_backward() const { return started_after_; }

 private:
  void on_grad_ready(const Tensor& leaf);
  void launch_ready_buckets(bool all);
  void finish();

  Communicator& comm_;
  std::vector<Tensor> params_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // parameter index -> bucket
  size_t next_launch_ = 0;         // buckets are started in this order only
  int64_t grads_pending_ = 0;      // parameters whose gradient this backward has not produced yet
  bool sync_ = true;
  int64_t started_during_ = 0, started_after_ = 0;
};

// Makes the scaler's skip-or-step decision the same on every rank: its found-inf becomes the
// max over the ranks (one allreduce per unscale_). Every rank skips and backs off together,
// and the scale stays identical everywhere.
void agree_found_inf(amp::GradScaler& scaler, Communicator& comm);

}  // namespace hg::dist
