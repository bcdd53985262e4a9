#include "framework/optim/adam.h"

#include <cmath>
#include <stdexcept>

#include "framework/autograd/grad_mode.h"
#include "framework/cuda/optim.h"

namespace hg::optim {

Adam::Adam(std::vector<Tensor> params, AdamOptions o, bool decoupled)
    : Optimizer(std::move(params), o.lr), opt_(o), decoupled_(decoupled), param_steps_(params_.size(), 0) {
  check_params(params_, decoupled ? "AdamW" : "Adam");
  if (o.lr < 0) throw std::invalid_argument("Adam: lr must be >= 0");
  if (o.beta1 < 0 || o.beta1 >= 1 || o.beta2 < 0 || o.beta2 >= 1)
    throw std::invalid_argument("Adam: betas must be in [0, 1)");
  if (o.eps < 0) throw std::invalid_argument("Adam: eps must be >= 0");
}

nlohmann::json Adam::hyperparameters() const {
  return {{"beta1", opt_.beta1}, {"beta2", opt_.beta2}, {"eps", opt_.eps},
          {"weight_decay", opt_.weight_decay}};
}

OptimizerState Adam::state_dict() const {
  OptimizerState s = Optimizer::state_dict();
  s.meta["param_steps"] = param_steps_;
  return s;
}

void Adam::load_state_dict(const OptimizerState& s) {
  // Read the counts first: a bad state must leave the optimizer as it was.
  std::vector<int64_t> t(params_.size(), 0);
  if (s.meta.contains("param_steps")) {
    const nlohmann::json& j = s.meta.at("param_steps");
    if (!j.is_array() || j.size() != params_.size())
      throw std::runtime_error("optimizer state: 'param_steps' must list one step count per parameter (" +
                               std::to_string(params_.size()) + "), got " + j.dump());
    for (size_t i = 0; i < t.size(); ++i) {
      if (!j[i].is_number_integer() || j[i].get<int64_t>() < 0)
        throw std::runtime_error("optimizer state: 'param_steps' entry " + std::to_string(i) +
                                 " must be an integer >= 0, got " + j[i].dump());
      t[i] = j[i].get<int64_t>();
    }
  } else {
    // Only the global count (see adam.h): t = steps where the parameter has moments.
    const int64_t steps = s.meta.value("steps", int64_t{0});
    for (const auto& nt : s.tensors) {
      const size_t dot = nt.name.find('.');  // "<parameter index>.exp_avg"
      if (dot == std::string::npos || nt.name.substr(dot + 1) != "exp_avg") continue;
      const std::string index = nt.name.substr(0, dot);
      if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) continue;
      const size_t i = std::stoul(index);  // a bad name is refused by Optimizer::load_state_dict
      if (i < t.size()) t[i] = steps;
    }
  }
  Optimizer::load_state_dict(s);  // throws, changing nothing, on another optimizer's state
  param_steps_ = std::move(t);
}

void Adam::step() {
  NoGradGuard no_grad;
  ++steps_;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor grad = p.grad();
    if (!grad.defined()) continue;  // no gradient: no update, and t stays where it is
    grad = grad.contiguous();
    // This parameter's t (PyTorch's state['step'] += 1). Scalars in double, as PyTorch
    // computes them in Python, then used in the compute type.
    const int64_t step = ++param_steps_[i];
    const double t = static_cast<double>(step);
    const double bias_correction1 = 1.0 - std::pow(opt_.beta1, t);
    const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(opt_.beta2, t));
    const double step_size = lr_ / bias_correction1;
    Tensor& m_t = state_for(i, "exp_avg");
    Tensor& v_t = state_for(i, "exp_avg_sq");

    if (p.device() == Device::CUDA) {  // the same update as the loop below, as one kernel
      cuda::adam_step(p, grad, m_t, v_t, lr_, opt_.beta1, opt_.beta2, opt_.eps, opt_.weight_decay, decoupled_,
                      step);
      continue;
    }
    visit_dtype(p.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      T* w = p.data<T>();
      const T* gw = grad.data<T>();
      C* m = m_t.data<C>();
      C* v = v_t.data<C>();
      const C b1 = static_cast<C>(opt_.beta1), b2 = static_cast<C>(opt_.beta2);
      const C one_b1 = static_cast<C>(1.0 - opt_.beta1), one_b2 = static_cast<C>(1.0 - opt_.beta2);
      const C wd = static_cast<C>(opt_.weight_decay), eps = static_cast<C>(opt_.eps);
      const C decay = static_cast<C>(1.0 - lr_ * opt_.weight_decay);
      const C bc2 = static_cast<C>(bias_correction2_sqrt), ss = static_cast<C>(step_size);
      const bool decoupled = decoupled_;
      const int64_t n = p.numel();
#pragma omp simd  // independent elements, as in SGD::step: several at once, the same bits
      for (int64_t k = 0; k < n; ++k) {
        C wk = load(w[k]);
        C g = load(gw[k]);
        if (decoupled) wk = wk * decay;             // AdamW
        else if (wd != 0) g = g + wd * wk;          // Adam
        m[k] = b1 * m[k] + one_b1 * g;
        v[k] = b2 * v[k] + one_b2 * (g * g);
        const C denom = std::sqrt(v[k]) / bc2 + eps;
        w[k] = store<T>(wk + (-ss) * (m[k] / denom));
      }
    });
  }
}

}  // namespace hg::optim
