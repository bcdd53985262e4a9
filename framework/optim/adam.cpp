#include "framework/optim/adam.h"

#include <cmath>
#include <stdexcept>

#include "framework/autograd/grad_mode.h"
#if HG_WITH_CUDA
#include "cuda/ops/optim.h"
#endif

namespace hg::optim {

Adam::Adam(std::vector<Tensor> params, AdamOptions o, bool decoupled)
    : Optimizer(std::move(params), o.lr), opt_(o), decoupled_(decoupled) {
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

void Adam::step() {
  NoGradGuard no_grad;
  ++steps_;  // t, shared by every parameter (PyTorch keeps one per parameter; they agree)
  // Scalars in double, as PyTorch computes them in Python, then used in the compute type.
  const double t = static_cast<double>(steps_);
  const double bias_correction1 = 1.0 - std::pow(opt_.beta1, t);
  const double bias_correction2_sqrt = std::sqrt(1.0 - std::pow(opt_.beta2, t));
  const double step_size = lr_ / bias_correction1;

  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor grad = p.grad();
    if (!grad.defined()) continue;
    grad = grad.contiguous();
    Tensor& m_t = state_for(i, "exp_avg");
    Tensor& v_t = state_for(i, "exp_avg_sq");

    if (p.device() == Device::CUDA) {  // the same update as the loop below, as one kernel
#if HG_WITH_CUDA
      cuda::adam_step(to_cuda_dtype(p.dtype()), p.raw_data(), grad.raw_data(),
                      static_cast<float*>(m_t.raw_data()), static_cast<float*>(v_t.raw_data()),
                      p.numel(), static_cast<float>(lr_), static_cast<float>(opt_.beta1),
                      static_cast<float>(opt_.beta2), static_cast<float>(opt_.eps),
                      static_cast<float>(opt_.weight_decay), decoupled_, steps_);
#endif
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
      const int64_t n = p.numel();
      for (int64_t k = 0; k < n; ++k) {
        C wk = load(w[k]);
        C g = load(gw[k]);
        if (decoupled_) wk = wk * decay;            // AdamW
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
