#include "framework/optim/sgd.h"

#include <stdexcept>

#include "framework/autograd/grad_mode.h"
#include "framework/cuda/optim.h"

namespace hg::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions o) : Optimizer(std::move(params), o.lr), opt_(o) {
  check_params(params_, "SGD");
  if (o.lr < 0) throw std::invalid_argument("SGD: lr must be >= 0");
  if (o.momentum < 0) throw std::invalid_argument("SGD: momentum must be >= 0");
  if (o.nesterov && (o.momentum <= 0 || o.dampening != 0))
    throw std::invalid_argument("SGD: nesterov needs momentum > 0 and dampening 0");
}

nlohmann::json SGD::hyperparameters() const {
  return {{"momentum", opt_.momentum}, {"dampening", opt_.dampening},
          {"weight_decay", opt_.weight_decay}, {"nesterov", opt_.nesterov}};
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor grad = p.grad();
    if (!grad.defined()) continue;  // a parameter the loss did not reach: left alone
    grad = grad.contiguous();
    const bool use_momentum = opt_.momentum != 0;
    bool first = false;
    Tensor buf_t = use_momentum ? state_for(i, "momentum_buffer", &first) : Tensor();

    if (p.device() == Device::CUDA) {  // the same update as the loop below, as one kernel
      cuda::sgd_step(p, grad, buf_t, lr_, opt_.momentum, opt_.dampening, opt_.weight_decay, opt_.nesterov,
                     first);
      continue;
    }
    visit_dtype(p.dtype(), [&](auto tag) {
      using T = decltype(tag);  // storage type of p and its grad
      using C = compute_t<T>;   // float (double for F64): the arithmetic and the state
      T* w = p.data<T>();
      const T* gw = grad.data<T>();
      C* buf = use_momentum ? buf_t.data<C>() : nullptr;
      const C lr = static_cast<C>(lr_), wd = static_cast<C>(opt_.weight_decay);
      const C mu = static_cast<C>(opt_.momentum), damp = static_cast<C>(1.0 - opt_.dampening);
      const bool nesterov = opt_.nesterov;
      const int64_t n = p.numel();
      // simd: the elements are independent, so the compiler may do several at once (it cannot
      // prove w, gw and buf do not overlap, and without this it would go one by one). Each
      // element's arithmetic is unchanged: the same bits as the scalar loop.
#pragma omp simd
      for (int64_t k = 0; k < n; ++k) {
        const C wk = load(w[k]);
        C g = load(gw[k]);
        if (wd != 0) g = g + wd * wk;
        if (use_momentum) {
          const C b = first ? g : mu * buf[k] + damp * g;
          buf[k] = b;
          g = nesterov ? g + mu * b : b;
        }
        w[k] = store<T>(wk + (-lr) * g);
      }
    });
  }
  ++steps_;
}

}  // namespace hg::optim
