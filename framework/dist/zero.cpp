#include "framework/dist/zero.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "framework/amp/unscale.h"
#include "framework/autograd/grad_mode.h"
#include "framework/memory/accountant.h"
#include "framework/ops/elementwise.h"

namespace hg::dist {

OptimizerMemory optimizer_memory(const optim::Optimizer& opt, int64_t master_bytes) {
  OptimizerMemory m;
  m.master_bytes = master_bytes;
  for (const nn::NamedTensor& t : opt.state_dict().tensors) m.state_bytes += int64_t(t.tensor.nbytes());
  return m;
}

ZeroAdamW::ZeroAdamW(std::vector<Tensor> params, Communicator& comm, optim::AdamOptions options)
    : params_(std::move(params)), comm_(comm) {
  if (params_.empty()) throw std::invalid_argument("ZeroAdamW: no parameters");
  for (const Tensor& p : params_) {
    if (p.dtype() != params_[0].dtype() || p.device() != params_[0].device() || !p.is_contiguous())
      throw std::invalid_argument("ZeroAdamW: every parameter must be contiguous, with the same dtype and device");
    numel_ += p.numel();
  }
  const int N = comm.world_size();
  shard_ = (numel_ + N - 1) / N;
  // This rank's shard of the flat parameter vector, as an F32 master copy.
  Tensor flat = Tensor::zeros({N * shard_}, DType::F32, params_[0].device());  // (N·c)
  copy_params_to(flat);
  const Range mine = shard();
  {  // the master shard is optimizer state (the ZeRO paper's 12 bytes: 4 of them are this copy);
     // `flat` above is a temporary. AdamW makes m and v at its first step, also as optimizer
     // state (Optimizer::state_for): 12·c bytes in all, which memory() reports and the
     // accountant counts.
    memory::TagScope scope(memory::Tag::OptimizerState);
    master_ = flat.slice(mine.begin, mine.end).clone();  // (c)
  }
  master_.requires_grad_(true);
  optimizer_ = std::make_unique<optim::AdamW>(std::vector<Tensor>{master_}, options);
}

Range ZeroAdamW::shard() const { return {comm_.rank() * shard_, (comm_.rank() + 1) * shard_}; }

void ZeroAdamW::copy_params_to(Tensor& flat) const {
  int64_t offset = 0;
  for (const Tensor& p : params_) {
    Tensor slot = flat.slice(offset, offset + p.numel());
    copy_(slot, p.detach().reshape({p.numel()}));
    offset += p.numel();
  }
}

void ZeroAdamW::zero_grad() {
  for (Tensor& p : params_)
    if (p.grad().defined()) p.zero_grad();
  optimizer_->zero_grad();
}

// 1. Every rank's gradients, side by side (F32, zero padding), reduce-scattered: rank k gets
// the average of elements [k·c, (k+1)·c) and nothing else.
void ZeroAdamW::reduce_gradients() {
  NoGradGuard no_grad;
  const int N = comm_.world_size();
  Tensor flat = Tensor::zeros({N * shard_}, DType::F32, params_[0].device());  // (N·c)
  int64_t offset = 0;
  for (const Tensor& p : params_) {  // a parameter without a gradient counts as zeros
    if (p.grad().defined()) {
      Tensor slot = flat.slice(offset, offset + p.numel());
      copy_(slot, p.grad().reshape({p.numel()}));
    }
    offset += p.numel();
  }
  Tensor g = Tensor::empty({shard_}, DType::F32, params_[0].device());  // (c)
  comm_.reduce_scatter(flat, g, ReduceOp::Avg);
  master_.set_grad(g);
}

optim::Optimizer& ZeroAdamW::optimizer() { return *optimizer_; }

// ‖g‖² is a sum over every element, and each rank holds the averaged gradient of its shard
// only: the ranks' partial sums of squares are added (one allreduce of one number), then each
// rank scales its shard by the same factor. The padding is zeros and adds nothing.
double ZeroAdamW::clip_grad_norm_(double max_norm) {
  const double mine = amp::clip_grad_norm_({master_}, std::numeric_limits<double>::infinity());  // measures only
  const double norm = std::sqrt(comm_.allreduce_sum(mine * mine));
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  NoGradGuard no_grad;
  Tensor g = master_.grad();
  mul_(g, max_norm / (norm + 1e-6));  // the factor of amp::clip_grad_norm_
  return norm;
}

// 3. Each rank's updated shard, in the parameters' dtype, gathered into every rank's
// parameters.
void ZeroAdamW::gather_parameters() {
  NoGradGuard no_grad;
  const DType dtype = params_[0].dtype();
  Tensor mine = master_.detach().to(dtype).contiguous();                                    // (c)
  Tensor flat = Tensor::empty({comm_.world_size() * shard_}, dtype, params_[0].device());  // (N·c)
  comm_.all_gather(mine, flat);
  int64_t offset = 0;
  for (Tensor& p : params_) {
    Tensor view = p.reshape({p.numel()});
    copy_(view, flat.slice(offset, offset + p.numel()));
    offset += p.numel();
  }
}

void ZeroAdamW::step() {
  reduce_gradients();
  optimizer_->step();
  gather_parameters();
}

OptimizerMemory ZeroAdamW::memory() const { return optimizer_memory(*optimizer_, int64_t(master_.nbytes())); }

}  // namespace hg::dist
