#include "framework/amp/autocast.h"
#include "framework/ops/layer_norm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <vector>

#include "framework/autograd/node.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/norm.h"
#include "framework/ops/check.h"

namespace hg {

namespace {

void check_feature_vector(const Tensor& x, const Tensor& t, const char* what, int64_t C) {
  if (!t.defined()) return;
  check_same_device("layer_norm", x, "x", t, what);
  if (t.shape() != Shape{C})
    op_error("layer_norm", fmt::format("{} must have shape ({}) (one value per feature of x's "
                                       "last dim), got {}; x is {}",
                                       what, C, shape_str(t.shape()), shape_str(x.shape())));
}

// What the backward needs besides x: per row the mean and 1/σ (in the compute type, F64
// for F64). The mean is kept relative to the row's first element (see the forward).
struct Saved {
  std::vector<double> mean_rel, rstd;  // (R)
  std::vector<double> weight;          // (C), all 1 when there is no weight
};

// Rows of the backward's weight/bias sums are added in fixed chunks, then the chunks in
// order: the same bits on any number of threads.
constexpr int64_t kRowChunk = 64;

// The op on the GPU: the same recipe in kernels (cuda/ops/layernorm.h); the per-row mean and
// 1/σ stay on the device for the backward.
Tensor layer_norm_on_cuda(const Tensor& x_in, const Tensor& weight, const Tensor& bias, double eps) {
  Tensor x = x_in.detach().contiguous(), w = weight.defined() ? weight.detach() : Tensor();
  auto saved = std::make_shared<cuda::LayerNormSaved>();
  Tensor y = cuda::layer_norm(x, weight, bias, eps, *saved);
  const DType wdt = weight.defined() ? weight.dtype() : x.dtype(), bdt = bias.defined() ? bias.dtype() : x.dtype();
  return record("layer_norm", y, {x_in, weight, bias}, [x, w, saved, wdt, bdt](const Tensor& dy, const NeedsGrad& need) {
    return cuda::layer_norm_backward(dy, x, w, *saved, need[0], need[1], need[2], wdt, bdt);
  });
}

}  // namespace

Tensor layer_norm(const Tensor& x_arg, const Tensor& w_arg, const Tensor& b_arg, double eps) {
  // autocast (framework/amp): cast at entry per the policy table (F32); a no-op outside a region
  const Tensor x_in = amp::autocast_cast(x_arg, "layer_norm"), weight = amp::autocast_cast(w_arg, "layer_norm"),
               bias = amp::autocast_cast(b_arg, "layer_norm");
  check_defined("layer_norm", x_in, "x");
  if (x_in.dim() == 0) op_error("layer_norm", "x needs at least one dimension (..., C)");
  const int64_t C = x_in.shape().back(), R = C == 0 ? 0 : x_in.numel() / C;
  if (C == 0) op_error("layer_norm", "the last dim of x is empty: nothing to normalise");
  check_feature_vector(x_in, weight, "weight", C);
  check_feature_vector(x_in, bias, "bias", C);
  if (!(eps >= 0)) op_error("layer_norm", fmt::format("eps must be ≥ 0, got {}", eps));
  switch (x_in.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA:
      return layer_norm_on_cuda(x_in, weight, bias, eps);
  }
  Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  auto saved = std::make_shared<Saved>();
  saved->mean_rel.resize(R);
  saved->rstd.resize(R);
  saved->weight = weight.defined() ? weight.to_double_vector() : std::vector<double>(C, 1.0);
  const std::vector<double> b = bias.defined() ? bias.to_double_vector() : std::vector<double>(C, 0.0);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = compute_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const std::vector<Acc> w(saved->weight.begin(), saved->weight.end()), bb(b.begin(), b.end());
#pragma omp parallel for if (x.numel() > cpu::kParallelMin)
    for (int64_t r = 0; r < R; ++r) {
      const T* xr = px + r * C;
      // Two passes: the mean, then the squared deviations from it. Never E[x²] − E[x]²,
      // which cancels every digit when |μ| ≫ σ. Both passes work on x − x[0] (the row's
      // first element): when |μ| ≫ σ these differences are small and exact, so even the
      // mean's rounding error is relative to σ, not to μ.
      const Acc x0 = load(xr[0]);
      Acc s = 0;
      for (int64_t c = 0; c < C; ++c) s += load(xr[c]) - x0;
      const Acc mu = s / Acc(C);  // mean of x − x0
      Acc ss = 0;
      for (int64_t c = 0; c < C; ++c) {
        const Acc d = (load(xr[c]) - x0) - mu;
        ss += d * d;
      }
      const Acc rstd = Acc(1) / std::sqrt(ss / Acc(C) + Acc(eps));
      for (int64_t c = 0; c < C; ++c)
        py[r * C + c] = store<T>(((load(xr[c]) - x0) - mu) * rstd * w[c] + bb[c]);
      saved->mean_rel[r] = mu;
      saved->rstd[r] = rstd;
    }
  });

  // With x̂ = (x − μ)·rstd and g = dy ⊙ weight, per row (the C values depend on each other
  // through μ and σ):
  //   dx = rstd · (g − mean_c(g) − x̂ · mean_c(g ⊙ x̂))
  //   dweight = Σ_rows dy ⊙ x̂          dbias = Σ_rows dy
  Tensor xd = x.detach();
  const DType wdt = weight.defined() ? weight.dtype() : x.dtype(), bdt = bias.defined() ? bias.dtype() : x.dtype();
  return record("layer_norm", y, {x_in, weight, bias},
                [xd, saved, R, C, wdt, bdt](const Tensor& dy_in, const NeedsGrad& need) {
    Tensor dy = dy_in.contiguous();
    Tensor dx, dw, db;
    visit_dtype(xd.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using Acc = compute_t<T>;
      const T* px = xd.data<T>();
      const T* pg = dy.data<T>();
      const std::vector<Acc> w(saved->weight.begin(), saved->weight.end());
      auto xhat = [&](int64_t r, int64_t c) {  // exactly as the forward computed it
        return ((load(px[r * C + c]) - load(px[r * C])) - Acc(saved->mean_rel[r])) * Acc(saved->rstd[r]);
      };
      if (need[0]) {
        dx = Tensor::empty(xd.shape(), xd.dtype());
        T* pd = dx.data<T>();
#pragma omp parallel for if (xd.numel() > cpu::kParallelMin)
        for (int64_t r = 0; r < R; ++r) {
          Acc sum_g = 0, sum_gx = 0;
          for (int64_t c = 0; c < C; ++c) {
            const Acc g = load(pg[r * C + c]) * w[c];
            sum_g += g;
            sum_gx += g * xhat(r, c);
          }
          const Acc mean_g = sum_g / Acc(C), mean_gx = sum_gx / Acc(C), rstd = Acc(saved->rstd[r]);
          for (int64_t c = 0; c < C; ++c) {
            const Acc g = load(pg[r * C + c]) * w[c];
            pd[r * C + c] = store<T>(rstd * (g - mean_g - xhat(r, c) * mean_gx));
          }
        }
      }
      if (need[1] || need[2]) {
        const int64_t chunks = (R + kRowChunk - 1) / kRowChunk;
        std::vector<Acc> part_w(chunks * C, Acc(0)), part_b(chunks * C, Acc(0));
#pragma omp parallel for if (xd.numel() > cpu::kParallelMin)
        for (int64_t k = 0; k < chunks; ++k)
          for (int64_t r = k * kRowChunk; r < std::min(R, (k + 1) * kRowChunk); ++r)
            for (int64_t c = 0; c < C; ++c) {
              const Acc g = load(pg[r * C + c]);
              part_w[k * C + c] += g * xhat(r, c);
              part_b[k * C + c] += g;
            }
        std::vector<double> sw(C, 0.0), sb(C, 0.0);
        for (int64_t k = 0; k < chunks; ++k)
          for (int64_t c = 0; c < C; ++c) {
            sw[c] += part_w[k * C + c];
            sb[c] += part_b[k * C + c];
          }
        if (need[1]) dw = Tensor::from_vector(sw, {C}, DType::F64).to(wdt);
        if (need[2]) db = Tensor::from_vector(sb, {C}, DType::F64).to(bdt);
      }
    });
    return std::vector<Tensor>{dx, dw, db};
  });
}

}  // namespace hg
