#include "framework/dist/ddp.h"

#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "framework/autograd/backward.h"
#include "framework/autograd/grad_mode.h"
#include "framework/ops/elementwise.h"

namespace hg::dist {

namespace {
// Is this .grad still the bucket's view (the very tensor the constructor gave it)?
bool is_slot(const Tensor& grad, const Tensor& view) { return grad.defined() && &grad.impl() == &view.impl(); }
}  // namespace

std::vector<std::vector<size_t>> assign_buckets(const std::vector<int64_t>& param_bytes, int64_t cap_bytes) {
  std::vector<std::vector<size_t>> buckets;
  int64_t filled = 0;
  for (size_t j = param_bytes.size(); j-- > 0;) {  // last parameter first
    if (buckets.empty() || (filled > 0 && filled + param_bytes[j] > cap_bytes)) {
      buckets.emplace_back();
      filled = 0;
    }
    buckets.back().push_back(j);
    filled += param_bytes[j];
  }
  return buckets;
}

DistributedDataParallel::DistributedDataParallel(nn::Module& model, Communicator& comm, DDPOptions options)
    : comm_(comm), params_(model.parameters()) {
  if (!(options.bucket_mb > 0))
    throw std::invalid_argument(fmt::format("DistributedDataParallel: bucket_mb must be > 0, got {}", options.bucket_mb));
  if (params_.empty()) throw std::invalid_argument("DistributedDataParallel: the model has no parameters");
  // Same model everywhere? A rank built with other sizes would broadcast garbage into it.
  const double n = double(model.num_parameters());
  if (comm.allreduce_max(n) != n || -comm.allreduce_max(-n) != n)
    throw std::runtime_error(fmt::format("DistributedDataParallel: {} has a model of {} parameters, another rank "
                                         "has a different one", comm.where(), int64_t(n)));
  // 1. Every replica starts from rank 0's numbers.
  NoGradGuard no_grad;
  for (const nn::NamedTensor& t : model.state()) {
    Tensor x = t.tensor;
    comm.broadcast(x, 0);
  }
  // 2. The buckets: one flat buffer each, for the gradients in packing order.
  const DType dtype = params_[0].dtype();
  const Device device = params_[0].device();
  std::vector<int64_t> bytes;
  for (const Tensor& p : params_) {
    if (p.dtype() != dtype || p.device() != device)
      throw std::invalid_argument("DistributedDataParallel: every parameter must have the same dtype and device");
    bytes.push_back(int64_t(p.nbytes()));
  }
  const int64_t cap = int64_t(options.bucket_mb * 1024 * 1024);
  bucket_of_.resize(params_.size());
  for (const std::vector<size_t>& members : assign_buckets(bytes, cap)) {
    Bucket b;
    int64_t numel = 0;
    for (size_t j : members) {
      b.params.push_back(j);
      b.offsets.push_back(numel);
      numel += params_[j].numel();
      bucket_of_[j] = buckets_.size();
    }
    b.flat = Tensor::zeros({numel}, dtype, device);
    for (size_t i = 0; i < b.params.size(); ++i) {
      Tensor& p = params_[b.params[i]];
      b.views.push_back(b.flat.slice(b.offsets[i], b.offsets[i] + p.numel()).reshape(p.shape()));
      if (p.grad().defined()) copy_(b.views.back(), p.grad());  // a gradient from before keeps its values
      p.set_grad(b.views.back());
    }
    buckets_.push_back(std::move(b));
  }
}

void DistributedDataParallel::backward(const Tensor& loss) {
  if (!sync_) {  // no_sync(): accumulate locally, talk to nobody
    if (loss.defined()) loss.backward();
    return;
  }
  for (Bucket& b : buckets_) b.pending = int(b.params.size());
  grads_pending_ = int64_t(params_.size());
  next_launch_ = 0;
  if (loss.defined()) {
    // The parameters' tensors, to find the bucket of the leaf the hook names.
    std::unordered_map<const TensorImpl*, size_t> index;
    for (size_t j = 0; j < params_.size(); ++j) index[&params_[j].impl()] = j;
    run_backward(loss, Tensor::ones(loss.shape(), loss.dtype(), loss.device()), [&](const Tensor& leaf) {
      const auto it = index.find(&leaf.impl());
      if (it == index.end()) return;  // a leaf that is not a parameter (an input with requires_grad)
      Bucket& b = buckets_[bucket_of_[it->second]];
      --grads_pending_;
      if (--b.pending == 0) launch_ready_buckets(false);
      for (Bucket& x : buckets_) x.work.done();  // MPI moves only inside MPI calls: nudge it
    });
  }
  finish();
}

// Starts bucket next_launch_, next_launch_ + 1, ... while they are ready (all: ready or not,
// after backward: a parameter the loss did not reach has no gradient coming).
// While gradients are still to come, a bucket's allreduce is started and left running
// (overlap). Once every gradient is there nothing is left to overlap with, and the blocking
// allreduce is the faster road: Open MPI's blocking collectives pick an algorithm for the
// message size (a ring for large ones), its non-blocking ones are simpler and move only
// while some rank is inside an MPI call. 2 MiB between 2 ranks on a 2-core VM (chapter 13's
// section 2 prints both times; README, "Measured"): 0.24 ms blocking, 0.30 ms non-blocking.
void DistributedDataParallel::launch_ready_buckets(bool all) {
  while (next_launch_ < buckets_.size() && (all || buckets_[next_launch_].pending == 0)) {
    Bucket& b = buckets_[next_launch_++];
    for (size_t i = 0; i < b.params.size(); ++i) {  // usually nothing to do: .grad is the slot
      const Tensor g = params_[b.params[i]].grad();
      if (!g.defined()) fill_(b.views[i], 0.0);  // set to none since: no gradient counts as zeros
      else if (!is_slot(g, b.views[i])) copy_(b.views[i], g);
    }
    if (all || grads_pending_ == 0) {
      comm_.allreduce(b.flat, ReduceOp::Avg);  // done when it returns
      b.work = Work();
      ++started_after_;
    } else {
      b.work = comm_.allreduce_async(b.flat, ReduceOp::Avg);
      ++started_during_;
    }
  }
}

// Starts what is left and waits for every bucket in order: the averages are in .grad (a
// gradient that was replaced gets its view back).
void DistributedDataParallel::finish() {
  launch_ready_buckets(true);
  for (Bucket& b : buckets_) {
    b.work.wait();
    for (size_t i = 0; i < b.params.size(); ++i) {
      Tensor& p = params_[b.params[i]];
      if (!is_slot(p.grad(), b.views[i])) p.set_grad(b.views[i]);
    }
  }
}

void agree_found_inf(amp::GradScaler& scaler, Communicator& comm) {
  scaler.set_found_inf_reducer([&comm](bool found_here) { return comm.allreduce_max(found_here ? 1.0 : 0.0) > 0; });
}

}  // namespace hg::dist
