#include "framework/amp/autocast.h"
#include "framework/ops/batch_norm.h"

#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <vector>

#include "framework/autograd/node.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/norm.h"
#include "framework/ops/check.h"
#include "framework/ops/elementwise.h"

namespace hg {

namespace {

void check_channel_vector(const Tensor& x, const Tensor& t, const char* what, int64_t C) {
  if (!t.defined()) return;
  check_same_device("batch_norm2d", x, "x", t, what);
  if (t.shape() != Shape{C})
    op_error("batch_norm2d", fmt::format("{} must have shape ({}) (one value per channel), got {}",
                                         what, C, shape_str(t.shape())));
}

std::vector<double> values_or(const Tensor& t, int64_t C, double fallback) {
  return t.defined() ? t.to_double_vector() : std::vector<double>(static_cast<size_t>(C), fallback);
}

// Per channel c, with x viewed as (N, C, HW): f(c, pointer to x[n, c, :]) for every n.
struct Layout {
  int64_t N, C, HW;
  int64_t M() const { return N * HW; }  // values per channel
};

// ---- the CPU recipe in three helpers, as the GPU's kernels (cuda/ops/batchnorm.h) ----------
// Per-channel μ and 1/√(σ² + eps), in double: what the apply and the backward share.
struct BnStats {
  std::vector<double> mean, invstd;
};

// statistics (training): the batch's μ and biased σ² per channel, two passes (no catastrophic
// cancellation); the running buffers, when both are given, move towards μ and the unbiased σ².
BnStats batch_statistics(const Tensor& x, const Layout& L, double eps, double momentum,
                         const Tensor& running_mean, const Tensor& running_var) {
  BnStats st{std::vector<double>(L.C), std::vector<double>(L.C)};
  std::vector<double> var(L.C);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
#pragma omp parallel for if (x.numel() > cpu::kParallelMin)
    for (int64_t c = 0; c < L.C; ++c) {
      double s = 0, s2 = 0;
      for (int64_t n = 0; n < L.N; ++n)
        for (int64_t i = 0; i < L.HW; ++i) s += static_cast<double>(load(px[(n * L.C + c) * L.HW + i]));
      double m = s / L.M();
      for (int64_t n = 0; n < L.N; ++n)
        for (int64_t i = 0; i < L.HW; ++i) {
          double d = static_cast<double>(load(px[(n * L.C + c) * L.HW + i])) - m;
          s2 += d * d;
        }
      st.mean[c] = m;
      var[c] = s2 / L.M();
    }
  });
  for (int64_t c = 0; c < L.C; ++c) st.invstd[c] = 1.0 / std::sqrt(var[c] + eps);
  if (running_mean.defined() && running_var.defined()) {  // update the buffers in place
    std::vector<double> rm = running_mean.to_double_vector(), rv = running_var.to_double_vector();
    const double unbias = static_cast<double>(L.M()) / (L.M() - 1);
    for (int64_t c = 0; c < L.C; ++c) {
      rm[c] = (1 - momentum) * rm[c] + momentum * st.mean[c];
      rv[c] = (1 - momentum) * rv[c] + momentum * var[c] * unbias;
    }
    Tensor rmt = running_mean, rvt = running_var;
    copy_(rmt, Tensor::from_vector(rm, {L.C}));
    copy_(rvt, Tensor::from_vector(rv, {L.C}));
  }
  return st;
}

// statistics (eval): the running buffers' μ and 1/√(σ² + eps).
BnStats running_statistics(const Tensor& running_mean, const Tensor& running_var, const Layout& L, double eps) {
  BnStats st{running_mean.to_double_vector(), std::vector<double>(L.C)};
  const std::vector<double> rv = running_var.to_double_vector();
  for (int64_t c = 0; c < L.C; ++c) st.invstd[c] = 1.0 / std::sqrt(rv[c] + eps);
  return st;
}

// apply: y = γ·(x − μ)·invstd + β = x·a + b with a = γ·invstd, b = β − μ·a (in x's compute type).
Tensor batch_norm_apply(const Tensor& x, const Layout& L, const BnStats& st, const std::vector<double>& g,
                        const std::vector<double>& bt) {
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Cm = compute_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
#pragma omp parallel for collapse(2) if (x.numel() > (1 << 15))
    for (int64_t n = 0; n < L.N; ++n)
      for (int64_t c = 0; c < L.C; ++c) {
        const Cm a = static_cast<Cm>(g[c] * st.invstd[c]);
        const Cm b = static_cast<Cm>(bt[c] - st.mean[c] * g[c] * st.invstd[c]);
        const int64_t base = (n * L.C + c) * L.HW;
        for (int64_t i = 0; i < L.HW; ++i) py[base + i] = store<T>(load(px[base + i]) * a + b);
      }
  });
  return y;
}

// backward: x̂ = (x − μ)·invstd,  y = γx̂ + β:
//   dβ = Σ dy,   dγ = Σ dy·x̂                          (sums over N, H, W)
//   training (μ, σ depend on x):  dx = γ·invstd·(dy − mean(dy) − x̂·mean(dy·x̂))
//   eval (μ, σ are constants):    dx = γ·invstd·dy
// Returns dx (x's dtype), dγ (gdt), dβ (bdt); each undefined when not needed.
std::vector<Tensor> batch_norm_backward(const Tensor& x, const Tensor& dy_in, const Layout& L, const BnStats& st,
                                        const std::vector<double>& g, bool training, const NeedsGrad& need,
                                        DType gdt, DType bdt) {
  Tensor dy = dy_in.contiguous();
  std::vector<double> sum_dy(L.C), sum_dy_xhat(L.C);
  Tensor dx = need[0] ? Tensor::empty(x.shape(), x.dtype()) : Tensor();
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Cm = compute_t<T>;
    const T* px = x.data<T>();
    const T* pg = dy.data<T>();
#pragma omp parallel for if (x.numel() > cpu::kParallelMin)
    for (int64_t c = 0; c < L.C; ++c) {
      double s = 0, sx = 0;
      const double m = st.mean[c], is = st.invstd[c];
      for (int64_t n = 0; n < L.N; ++n)
        for (int64_t i = 0; i < L.HW; ++i) {
          int64_t k = (n * L.C + c) * L.HW + i;
          double gy = static_cast<double>(load(pg[k]));
          s += gy;
          sx += gy * (static_cast<double>(load(px[k])) - m) * is;
        }
      sum_dy[c] = s;
      sum_dy_xhat[c] = sx;
    }
    if (need[0]) {
      T* pd = dx.data<T>();
#pragma omp parallel for collapse(2) if (x.numel() > (1 << 15))
      for (int64_t n = 0; n < L.N; ++n)
        for (int64_t c = 0; c < L.C; ++c) {
          const Cm m = static_cast<Cm>(st.mean[c]), is = static_cast<Cm>(st.invstd[c]);
          const Cm k = static_cast<Cm>(g[c] * st.invstd[c]);
          const Cm mdy = training ? static_cast<Cm>(sum_dy[c] / L.M()) : Cm(0);
          const Cm mdyx = training ? static_cast<Cm>(sum_dy_xhat[c] / L.M()) : Cm(0);
          const int64_t base = (n * L.C + c) * L.HW;
          for (int64_t i = 0; i < L.HW; ++i) {
            Cm xhat = (load(px[base + i]) - m) * is;
            pd[base + i] = store<T>(k * (load(pg[base + i]) - mdy - xhat * mdyx));
          }
        }
    }
  });
  Tensor dgamma = need[1] ? Tensor::from_vector(sum_dy_xhat, {L.C}, gdt) : Tensor();
  Tensor dbeta = need[2] ? Tensor::from_vector(sum_dy, {L.C}, bdt) : Tensor();
  return {dx, dgamma, dbeta};
}

}  // namespace

Tensor batch_norm2d(const Tensor& x_arg, const Tensor& gamma, const Tensor& beta,
                    const Tensor& running_mean, const Tensor& running_var, bool training,
                    double momentum, double eps) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x_in = amp::autocast_cast(x_arg, "batch_norm2d");  // as it arrives; statistics in F32
  check_defined("batch_norm2d", x_in, "x");
  check_dim("batch_norm2d", x_in, "x", 4, "(N, C, H, W)");
  const Layout L{x_in.size(0), x_in.size(1), x_in.size(2) * x_in.size(3)};
  check_channel_vector(x_in, gamma, "gamma", L.C);
  check_channel_vector(x_in, beta, "beta", L.C);
  check_channel_vector(x_in, running_mean, "running_mean", L.C);
  check_channel_vector(x_in, running_var, "running_var", L.C);
  if (!training && (!running_mean.defined() || !running_var.defined()))
    op_error("batch_norm2d", "eval mode needs running_mean and running_var");
  if (training && L.M() < 2)
    op_error("batch_norm2d", fmt::format("training needs more than one value per channel to "
                                         "estimate a variance, got x of shape {}",
                                         shape_str(x_in.shape())));
  switch (x_in.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA: {
      // the same three steps in kernels (cuda/ops/batchnorm.h); running statistics updated in place
      auto saved = std::make_shared<cuda::BatchNormSaved>();
      Tensor xs = x_in.detach().contiguous(), gs = gamma.defined() ? gamma.detach() : Tensor();
      Tensor y = cuda::batch_norm2d(xs, gamma, beta, running_mean, running_var, training, momentum,
                                    eps, *saved);
      const DType gdt = gamma.defined() ? gamma.dtype() : xs.dtype(),
                  bdt = beta.defined() ? beta.dtype() : xs.dtype();
      return record("batch_norm2d", y, {x_in, gamma, beta},
                    [xs, gs, saved, training, gdt, bdt](const Tensor& dy, const NeedsGrad& need) {
                      std::vector<Tensor> d =
                          cuda::batch_norm2d_backward(dy, xs, gs, *saved, training, gdt, bdt);
                      for (size_t i = 0; i < 3; ++i)
                        if (!need[i]) d[i] = Tensor();
                      return d;
                    });
    }
  }
  Tensor x = x_in.contiguous();
  auto st = std::make_shared<const BnStats>(
      training ? batch_statistics(x, L, eps, momentum, running_mean, running_var)
               : running_statistics(running_mean, running_var, L, eps));
  const std::vector<double> g = values_or(gamma, L.C, 1.0), bt = values_or(beta, L.C, 0.0);
  Tensor y = batch_norm_apply(x, L, *st, g, bt);
  Tensor xs = x.detach();
  DType gdt = gamma.defined() ? gamma.dtype() : x.dtype(), bdt = beta.defined() ? beta.dtype() : x.dtype();
  return record("batch_norm2d", y, {x_in, gamma, beta},
                [xs, st, g, L, training, gdt, bdt](const Tensor& dy, const NeedsGrad& need) {
                  return batch_norm_backward(xs, dy, L, *st, g, training, need, gdt, bdt);
                });
}

}  // namespace hg
