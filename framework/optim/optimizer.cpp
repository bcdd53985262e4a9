#include "framework/optim/optimizer.h"

#include <stdexcept>

#include "framework/memory/accountant.h"

namespace hg::optim {

void check_params(const std::vector<Tensor>& params, const std::string& who) {
  if (params.empty()) throw std::invalid_argument(who + ": no parameters to optimize");
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    if (!p.defined()) throw std::invalid_argument(who + ": parameter " + std::to_string(i) + " is undefined");
    if (!p.is_leaf())
      throw std::invalid_argument(who + ": parameter " + std::to_string(i) +
                                  " is the result of an op, not a leaf; optimize the leaf tensors");
    if (p.device() == Device::CUDA && p.dtype() == DType::F64)
      throw std::invalid_argument(who + ": parameter " + std::to_string(i) + " is F64 on the GPU; "
                                  "the GPU optimizers update F32, F16 and BF16 parameters");
    if (!p.is_contiguous())
      throw std::invalid_argument(who + ": parameter " + std::to_string(i) + " is not contiguous");
  }
}

Optimizer::Optimizer(std::vector<Tensor> params, double lr)
    : params_(std::move(params)), lr_(lr), state_(params_.size()) {}

void Optimizer::zero_grad() {
  for (auto& p : params_)
    if (p.grad().defined()) p.zero_grad();
}

Tensor& Optimizer::state_for(size_t i, const std::string& key, bool* created) {
  auto it = state_[i].find(key);
  if (created) *created = it == state_[i].end();
  if (it == state_[i].end()) {
    memory::TagScope scope(memory::Tag::OptimizerState);
    it = state_[i].emplace(key, Tensor::zeros(params_[i].shape(), compute_dtype(params_[i].dtype()),
                                              params_[i].device())).first;
  }
  return it->second;
}

OptimizerState Optimizer::state_dict() const {
  OptimizerState s;
  s.meta = {{"type", name()}, {"lr", lr_}, {"steps", steps_},
            {"num_params", params_.size()}, {"hyper", hyperparameters()}};
  for (size_t i = 0; i < state_.size(); ++i)
    for (const auto& [key, t] : state_[i]) s.tensors.push_back({std::to_string(i) + "." + key, t});
  return s;
}

void Optimizer::load_state_dict(const OptimizerState& s) {
  const std::string type = s.meta.value("type", std::string("?"));
  if (type != name())
    throw std::runtime_error("optimizer state is for '" + type + "', this optimizer is '" + name() + "'");
  const size_t n = s.meta.value("num_params", size_t{0});
  if (n != params_.size())
    throw std::runtime_error("optimizer state has " + std::to_string(n) + " parameters, this optimizer " +
                             std::to_string(params_.size()));
  std::vector<std::map<std::string, Tensor>> state(params_.size());
  for (const auto& nt : s.tensors) {
    const size_t dot = nt.name.find('.');
    if (dot == std::string::npos) throw std::runtime_error("optimizer state: bad tensor name '" + nt.name + "'");
    const size_t i = std::stoul(nt.name.substr(0, dot));
    if (i >= params_.size()) throw std::runtime_error("optimizer state: '" + nt.name + "' has no parameter");
    if (nt.tensor.shape() != params_[i].shape())
      throw std::runtime_error("optimizer state: '" + nt.name + "' has shape " + shape_str(nt.tensor.shape()) +
                               ", the parameter " + shape_str(params_[i].shape()));
    // A private copy in the compute dtype: the loaded state must not alias the source.
    Tensor& slot = state[i][nt.name.substr(dot + 1)];
    slot = nt.tensor.detach().to(compute_dtype(params_[i].dtype())).clone().to(params_[i].device());
    memory::retag(slot, memory::Tag::OptimizerState);
  }
  state_ = std::move(state);
  lr_ = s.meta.at("lr").get<double>();
  steps_ = s.meta.at("steps").get<int64_t>();
}

}  // namespace hg::optim
