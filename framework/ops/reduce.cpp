#include "framework/amp/autocast.h"
#include "framework/ops/reduce.h"

#include <algorithm>

#include "framework/autograd/node.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/reduce.h"
#include "framework/ops/check.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/shape.h"

namespace hg {

namespace {

// Σ x · scale over all elements, accumulated in double.
Tensor reduce_all(const char* op, const Tensor& x_in, double scale) {
  check_defined(op, x_in, "x");
  switch (x_in.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA:
      return cuda::sum_all(op, x_in.contiguous(), scale);  // F32 accumulation, two passes
  }
  Tensor x = x_in.contiguous();
  double acc = 0;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    acc = cpu::deterministic_sum(x.numel(), [p](int64_t i) { return static_cast<double>(load(p[i])); });
  });
  return Tensor::scalar(acc * scale, x.dtype());
}

// Σ_j x[o, j, i] · scale for x viewed as (outer, n, inner), n = x.shape[dim].
Tensor reduce_dim(const char* op, const Tensor& x_in, int64_t dim_in, bool keepdim, double scale_per_n) {
  check_defined(op, x_in, "x");
  const int64_t dim = wrap_dim(op, dim_in, x_in.dim());
  switch (x_in.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA: {
      const int64_t n = x_in.shape()[dim];
      return cuda::sum_dim(op, x_in.contiguous(), dim, keepdim,
                           scale_per_n > 0 ? scale_per_n / (n ? n : 1) : 1.0);
    }
  }
  // F16/BF16: widen once (vectorised), sum in F32, round the result once — the same numbers
  // as widening element by element inside the loop, without a conversion per load.
  if (is_low_precision(x_in.dtype()))
    return reduce_dim(op, x_in.detach().to(DType::F32), dim, keepdim, scale_per_n).to(x_in.dtype());
  Tensor x = x_in.contiguous();
  const Shape& s = x.shape();
  int64_t outer = 1, inner = 1, n = s[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= s[d];
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= s[d];
  Shape out_shape = s;
  if (keepdim) out_shape[dim] = 1;
  else out_shape.erase(out_shape.begin() + dim);
  Tensor y = Tensor::empty(out_shape, x.dtype());
  const double scale = scale_per_n > 0 ? scale_per_n / (n ? n : 1) : 1.0;
  // Each output sums its n inputs in the order j = 0 .. n-1, whatever the threads. The outputs
  // go in blocks of up to 64 neighbours (x[o, j, i0 .. i0+63]): the loop over a block reads
  // each row of x contiguously and adds 64 independent sums side by side, which the compiler
  // vectorises, and the (o, block) pairs are shared by the threads — also when outer is 1, as
  // in a bias gradient, the sum over the batch of dy (N, F).
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
#pragma omp parallel for if (outer * inner * n > cpu::kParallelMin)
    for (int64_t t = 0; t < outer * blocks; ++t) {
      const int64_t o = t / blocks, i0 = (t % blocks) * kBlock, width = std::min(kBlock, inner - i0);
      C acc[kBlock] = {};
      const T* base = px + o * n * inner + i0;
      for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < width; ++i) acc[i] += load(base[j * inner + i]);
      for (int64_t i = 0; i < width; ++i) py[o * inner + i0 + i] = store<T>(acc[i] * static_cast<C>(scale));
    }
  });
  return y;
}

// dy of a reduction, spread back over x's shape: every element of x contributed once.
Tensor spread(const Tensor& dy, const Shape& keep_shape, const Shape& x_shape, double scale) {
  switch (dy.device()) {
    case Device::CPU: break;  // the expand below
    case Device::CUDA: {
      // which dims were reduced: none (size 1 already), one (sum over dim), or all (sum)
      int64_t dim = -1, reduced = 0;
      for (size_t d = 0; d < x_shape.size(); ++d)
        if (keep_shape[d] != x_shape[d]) ++reduced, dim = static_cast<int64_t>(d);
      if (reduced == 0) return scale == 1.0 ? dy.reshape(x_shape) : mul(dy.reshape(x_shape), scale);
      return cuda::sum_backward(dy, x_shape, reduced == 1 ? dim : -1, scale);
    }
  }
  Tensor g = expand(dy.reshape(keep_shape), x_shape).contiguous();
  return scale == 1.0 ? g : cpu::map(g, [scale](auto v) { return v * decltype(v)(scale); });
}

Shape keepdim_shape(const Shape& s, int64_t dim) {
  Shape k = s;
  k[dim] = 1;
  return k;
}

}  // namespace

Tensor sum(const Tensor& x_arg) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "sum");
  Tensor y = reduce_all("sum", x, 1.0);
  // d(Σx)/dx_i = 1
  Shape xs = x.shape();
  return record("sum", y, {x}, [xs](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{spread(dy, Shape(xs.size(), 1), xs, 1.0)};
  });
}

Tensor mean(const Tensor& x_arg) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "mean");
  const int64_t n = x.defined() ? x.numel() : 1;
  Tensor y = reduce_all("mean", x, 1.0 / (n ? n : 1));
  // d(Σx/n)/dx_i = 1/n
  Shape xs = x.shape();
  return record("mean", y, {x}, [xs, n](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{spread(dy, Shape(xs.size(), 1), xs, 1.0 / n)};
  });
}

Tensor sum(const Tensor& x_arg, int64_t dim, bool keepdim) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "sum");
  Tensor y = reduce_dim("sum", x, dim, keepdim, 0);
  // d(Σ_j x_j)/dx_i = 1 along the reduced dim
  Shape xs = x.shape();
  Shape ks = keepdim_shape(xs, wrap_dim("sum", dim, x.dim()));
  return record("sum_dim", y, {x}, [xs, ks](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{spread(dy, ks, xs, 1.0)};
  });
}

Tensor mean(const Tensor& x_arg, int64_t dim, bool keepdim) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "mean");
  Tensor y = reduce_dim("mean", x, dim, keepdim, 1.0);
  // d(mean_j x_j)/dx_i = 1/n along the reduced dim
  Shape xs = x.shape();
  int64_t d = wrap_dim("mean", dim, x.dim());
  Shape ks = keepdim_shape(xs, d);
  double inv_n = 1.0 / (xs[d] ? xs[d] : 1);
  return record("mean_dim", y, {x}, [xs, ks, inv_n](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{spread(dy, ks, xs, inv_n)};
  });
}

}  // namespace hg
