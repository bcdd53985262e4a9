#include "framework/amp/autocast.h"
#include "framework/ops/attention.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "framework/autograd/node.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/attention.h"
#include "framework/ops/check.h"

namespace hg {

namespace {

// (..., T, T) -> T, after the checks every entry does.
int64_t check_scores(const char* op, const Tensor& x) {
  check_defined(op, x, "scores");
  if (x.dim() < 2 || x.shape()[x.dim() - 1] != x.shape()[x.dim() - 2])
    op_error(op, fmt::format("scores must be (..., T, T), queries × keys, got shape {}",
                             shape_str(x.shape())));
  return x.shape().back();
}

// y (..., T, T): f(row i, x's row, y's row) for every row of every matrix; F is generic over
// the stored type.
template <class F> Tensor map_rows(const Tensor& x_in, int64_t T, F f) {
  Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  const int64_t rows = T == 0 ? 0 : x.numel() / T;
  visit_dtype(x.dtype(), [&](auto tag) {
    using S = decltype(tag);
    const S* px = x.data<S>();
    S* py = y.data<S>();
#pragma omp parallel for if (x.numel() > cpu::kParallelMin)
    for (int64_t r = 0; r < rows; ++r) f(r % T, px + r * T, py + r * T);
  });
  return y;
}

// y[i, j] = x[i, j] where j ≤ i, `above` where j > i, on x's device: the mask (above = −inf)
// and its backward (above = 0) are the same copy.
Tensor mask_above_diagonal(const Tensor& x, int64_t T, double above) {
  switch (x.device()) {
    case Device::CPU: break;  // the rows below
    case Device::CUDA:
      return cuda::causal_mask(x.contiguous(), above);
  }
  return map_rows(x, T, [T, above](int64_t i, const auto* xr, auto* yr) {
    using S = std::remove_const_t<std::remove_pointer_t<decltype(xr)>>;
    for (int64_t j = 0; j < T; ++j) yr[j] = j <= i ? xr[j] : store<S>(compute_t<S>(above));
  });
}

}  // namespace

Tensor causal_mask(const Tensor& x_arg) {
  // autocast (framework/amp): a copy, run in the dtype that arrives
  const Tensor x = amp::autocast_cast(x_arg, "causal_mask");
  const int64_t T = check_scores("causal_mask", x);
  Tensor y = mask_above_diagonal(x, T, -std::numeric_limits<double>::infinity());
  // ∂y[i, j]/∂x[i, j] = 1 where j ≤ i, 0 above the diagonal (a constant there)
  return record("causal_mask", y, {x}, [T](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{mask_above_diagonal(dy, T, 0.0)};
  });
}

Tensor causal_softmax(const Tensor& x_arg, double scale) {
  // autocast (framework/amp): cast at entry per the policy table (F32); a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "causal_softmax");
  const int64_t T = check_scores("causal_softmax", x);
  // Row i sees keys 0..i; the max is subtracted so every exponent is ≤ 0 (no overflow).
  Tensor xc = x.contiguous();
  switch (xc.device()) {
    case Device::CPU: break;  // the rows below
    case Device::CUDA: {
      // one warp per row (cuda/ops/attention.h); the backward on the GPU too
      Tensor y = cuda::causal_softmax(xc, scale), yd = y.detach();
      return record("causal_softmax", y, {x}, [yd, scale](const Tensor& dy, const NeedsGrad&) {
        return std::vector<Tensor>{cuda::causal_softmax_backward(yd, dy, scale)};
      });
    }
  }
  Tensor y = Tensor::empty(xc.shape(), xc.dtype());
  const int64_t rows = xc.numel() / T;
  visit_dtype(xc.dtype(), [&](auto tag) {
    using S = decltype(tag);
    using C = compute_t<S>;
    const S* px = xc.data<S>();
    S* py = y.data<S>();
    const C s = C(scale);
#pragma omp parallel if (xc.numel() > cpu::kParallelMin)
    {
      std::vector<C> e(static_cast<size_t>(T));  // this thread's row of exponentials
#pragma omp for
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r % T;
        const S* xr = px + r * T;
        S* yr = py + r * T;
        C m = -INFINITY;
        for (int64_t j = 0; j <= i; ++j) m = std::max(m, s * load(xr[j]));
        C sum = 0;
        for (int64_t j = 0; j <= i; ++j) sum += (e[j] = std::exp(s * load(xr[j]) - m));
        const C inv = C(1) / sum;
        for (int64_t j = 0; j <= i; ++j) yr[j] = store<S>(e[j] * inv);  // the one rounding
        for (int64_t j = i + 1; j < T; ++j) yr[j] = store<S>(0);
      }
    }
  });
  // Softmax's Jacobian on the unmasked keys, times the scale (y = 0 on the masked ones):
  //   dx[i, j] = s · y[i, j] · (dy[i, j] − Σ_{k≤i} dy[i, k] · y[i, k])
  Tensor yd = y.detach();
  return record("causal_softmax", y, {x}, [yd, T, scale](const Tensor& dy_in, const NeedsGrad&) {
    Tensor dy = dy_in.contiguous();
    Tensor dx = Tensor::empty(yd.shape(), yd.dtype());
    const int64_t rows = yd.numel() / T;
    visit_dtype(yd.dtype(), [&](auto tag) {
      using S = decltype(tag);
      using C = compute_t<S>;
      const S* py = yd.data<S>();
      const S* pg = dy.data<S>();
      S* pd = dx.data<S>();
#pragma omp parallel for if (yd.numel() > cpu::kParallelMin)
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r % T, base = r * T;
        C dot = 0;
        for (int64_t j = 0; j <= i; ++j) dot += load(pg[base + j]) * load(py[base + j]);
        for (int64_t j = 0; j <= i; ++j)
          pd[base + j] = store<S>(C(scale) * load(py[base + j]) * (load(pg[base + j]) - dot));
        for (int64_t j = i + 1; j < T; ++j) pd[base + j] = store<S>(0);
      }
    });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace hg
