#include "framework/dist/zero.h"

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

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

// ---- checkpoints: the shards as plain AdamW's state ---------------------------------------

namespace {
void check_f32(const std::vector<Tensor>& params, const char* call) {
  if (params[0].dtype() != DType::F32)
    throw std::invalid_argument(fmt::format("ZeroAdamW::{}: the parameters are {}: plain AdamW's state has no place "
                                            "for the F32 master shard of such weights (F32 parameters only)",
                                            call, dtype_name(params[0].dtype())));
}
}  // namespace

// Each of the shard's state tensors ("0.exp_avg", (c)) gathered into (N·c), then cut at the
// parameters' boundaries, in plain AdamW's order: by parameter, then by name.
optim::OptimizerState ZeroAdamW::state_dict() {
  check_f32(params_, "state_dict");
  const optim::OptimizerState shard = optimizer_->state_dict();  // the same names, in the same order, on every rank
  std::map<std::string, Tensor> whole;                            // "exp_avg" -> (N·c)
  for (const nn::NamedTensor& t : shard.tensors) {
    Tensor flat = Tensor::empty({comm_.world_size() * shard_}, DType::F32, params_[0].device());
    comm_.all_gather(t.tensor, flat);
    whole[t.name.substr(t.name.find('.') + 1)] = flat;
  }
  optim::OptimizerState s;
  s.meta = shard.meta;  // the type, lr, the step count, the hyperparameters
  s.meta["num_params"] = params_.size();
  s.meta["param_steps"] = std::vector<int64_t>(params_.size(), optimizer_->param_step(0));  // one t for all
  int64_t offset = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    for (const auto& [what, flat] : whole)
      s.tensors.push_back({std::to_string(i) + "." + what, flat.slice(offset, offset + p.numel()).reshape(p.shape()).clone()});
    offset += p.numel();
  }
  return s;
}

// The reverse: each state tensor laid out flat (N·c, zero padding, as the shard's own
// padding stays zero), this rank's [k·c, (k+1)·c) kept.
void ZeroAdamW::load_state_dict(const optim::OptimizerState& state) {
  check_f32(params_, "load_state_dict");
  // Plain AdamW's own checks (type, parameter count, names, shapes), on a probe: a state
  // that does not fit changes nothing. It also gives every tensor in F32.
  optim::AdamW probe(params_, optimizer_->options());
  probe.load_state_dict(state);
  for (size_t i = 1; i < params_.size(); ++i)
    if (probe.param_step(i) != probe.param_step(0))
      throw std::invalid_argument(fmt::format("ZeroAdamW::load_state_dict: parameter {} has taken {} steps, parameter "
                                              "0 {}: the shard steps all its elements together",
                                              i, probe.param_step(i), probe.param_step(0)));
  const int N = comm_.world_size();
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (const Tensor& p : params_) {
    offsets.push_back(offset);
    offset += p.numel();
  }
  const optim::OptimizerState full = probe.state_dict();
  std::map<std::string, Tensor> flat;  // "exp_avg" -> (N·c)
  for (const nn::NamedTensor& t : full.tensors) {
    const size_t dot = t.name.find('.');
    const size_t i = std::stoul(t.name.substr(0, dot));
    Tensor& f = flat[t.name.substr(dot + 1)];
    if (!f.defined()) f = Tensor::zeros({N * shard_}, DType::F32, params_[0].device());
    Tensor slot = f.slice(offsets[i], offsets[i] + params_[i].numel());
    copy_(slot, t.tensor.reshape({params_[i].numel()}));
  }
  const Range mine = shard();
  optim::OptimizerState own;
  own.meta = full.meta;
  own.meta["num_params"] = 1;
  own.meta["param_steps"] = nlohmann::json::array({probe.param_step(0)});
  for (const auto& [what, f] : flat) own.tensors.push_back({"0." + what, f.slice(mine.begin, mine.end).clone()});
  optimizer_->load_state_dict(own);
  // The master shard: the parameters' values (the model's weights, restored from the same checkpoint).
  NoGradGuard no_grad;
  Tensor all = Tensor::zeros({N * shard_}, DType::F32, params_[0].device());  // (N·c)
  copy_params_to(all);
  copy_(master_, all.slice(mine.begin, mine.end));
}

OptimizerMemory ZeroAdamW::memory() const { return optimizer_memory(*optimizer_, int64_t(master_.nbytes())); }

}  // namespace hg::dist
