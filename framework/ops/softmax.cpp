#include "framework/amp/autocast.h"
#include "framework/ops/softmax.h"

#include <cmath>

#include "framework/autograd/node.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/softmax.h"
#include "framework/ops/check.h"

namespace hg {

namespace {

// x viewed as (outer, n, inner) with n the size of the softmax dim; one "row" is the n
// values at stride `inner`.
struct Rows {
  int64_t outer = 1, n = 1, inner = 1;
  Rows(const Shape& s, int64_t dim) {
    n = s[dim];
    for (int64_t d = 0; d < dim; ++d) outer *= s[d];
    for (int64_t d = dim + 1; d < static_cast<int64_t>(s.size()); ++d) inner *= s[d];
  }
};

// log = false: y = softmax(x); log = true: y = log_softmax(x)
Tensor softmax_forward(const char* op, const Tensor& x_in, int64_t dim_in, bool log) {
  check_defined(op, x_in, "x");
  if (x_in.dim() == 0) op_error(op, "needs at least one dimension");
  const int64_t dim = wrap_dim(op, dim_in, x_in.dim());
  switch (x_in.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA:
      return cuda::softmax(x_in.contiguous(), dim, log);
  }
  Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  Rows r(x.shape(), dim);
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
#pragma omp parallel for if (x.numel() > cpu::kParallelMin)
    for (int64_t row = 0; row < r.outer * r.inner; ++row) {
      int64_t o = row / r.inner, i = row % r.inner;
      const T* xr = px + o * r.n * r.inner + i;
      T* yr = py + o * r.n * r.inner + i;
      C m = -INFINITY;
      for (int64_t j = 0; j < r.n; ++j) m = std::max(m, load(xr[j * r.inner]));
      C s = 0;
      for (int64_t j = 0; j < r.n; ++j) s += std::exp(load(xr[j * r.inner]) - m);
      if (log) {
        C lse = m + std::log(s);
        for (int64_t j = 0; j < r.n; ++j) yr[j * r.inner] = store<T>(load(xr[j * r.inner]) - lse);
      } else {
        C inv = C(1) / s;
        for (int64_t j = 0; j < r.n; ++j)
          yr[j * r.inner] = store<T>(std::exp(load(xr[j * r.inner]) - m) * inv);
      }
    }
  });
  return y;
}

// Per row: dx_j = f(dy_j, y_j, Σ_k g(dy_k, y_k)).
template <class Dot, class Out>
Tensor softmax_backward(const Tensor& dy_in, const Tensor& y, int64_t dim, Dot dot, Out out) {
  Tensor dy = dy_in.contiguous();
  Tensor dx = Tensor::empty(y.shape(), y.dtype());
  Rows r(y.shape(), dim);
  visit_dtype(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* pg = dy.data<T>();
    const T* py = y.data<T>();
    T* pd = dx.data<T>();
#pragma omp parallel for if (y.numel() > cpu::kParallelMin)
    for (int64_t row = 0; row < r.outer * r.inner; ++row) {
      int64_t base = (row / r.inner) * r.n * r.inner + row % r.inner;
      C s = 0;
      for (int64_t j = 0; j < r.n; ++j) {
        int64_t k = base + j * r.inner;
        s += dot(load(pg[k]), load(py[k]));
      }
      for (int64_t j = 0; j < r.n; ++j) {
        int64_t k = base + j * r.inner;
        pd[k] = store<T>(out(load(pg[k]), load(py[k]), s));
      }
    }
  });
  return dx;
}

}  // namespace

Tensor softmax(const Tensor& x_arg, int64_t dim) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "softmax");
  Tensor y = softmax_forward("softmax", x, dim, false);
  // ∂y_i/∂x_j = y_i(δ_ij − y_j)  =>  dx_j = y_j · (dy_j − Σ_i dy_i y_i)
  Tensor yd = y.detach();
  int64_t d = wrap_dim("softmax", dim, x.dim());
  return record("softmax", y, {x}, [yd, d](const Tensor& dy, const NeedsGrad&) {
    if (yd.device() == Device::CUDA) return std::vector<Tensor>{cuda::softmax_backward(yd, dy, d, false)};
    return std::vector<Tensor>{softmax_backward(
        dy, yd, d, [](auto g, auto p) { return g * p; },
        [](auto g, auto p, auto s) { return p * (g - s); })};
  });
}

Tensor log_softmax(const Tensor& x_arg, int64_t dim) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "log_softmax");
  Tensor y = softmax_forward("log_softmax", x, dim, true);
  // ∂y_i/∂x_j = δ_ij − softmax_j  =>  dx_j = dy_j − softmax_j · Σ_i dy_i,  softmax = e^y
  Tensor yd = y.detach();
  int64_t d = wrap_dim("log_softmax", dim, x.dim());
  return record("log_softmax", y, {x}, [yd, d](const Tensor& dy, const NeedsGrad&) {
    if (yd.device() == Device::CUDA) return std::vector<Tensor>{cuda::softmax_backward(yd, dy, d, true)};
    return std::vector<Tensor>{softmax_backward(
        dy, yd, d, [](auto g, auto) { return g; },
        [](auto g, auto ly, auto s) { return g - std::exp(ly) * s; })};
  });
}

}  // namespace hg
