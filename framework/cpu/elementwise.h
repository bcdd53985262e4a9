#pragma once
// framework/cpu/elementwise.h — the loops under every elementwise op.
//
// Each helper walks contiguous CPU tensors once, loads every element into its compute type
// (float for F32/F16/BF16, double for F64), applies f, and rounds the result back to the
// storage dtype: so F16 math is "compute in F32, round to F16", as on a GPU. Large tensors
// are split across threads with OpenMP; small ones stay on one thread, where starting a
// team would cost more than the loop.
//
// f is a generic lambda, called with the compute type: [](auto v) { return v > 0 ? v : 0*v; }
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg::cpu {

constexpr int64_t kParallelMin = 1 << 15;  // elements: below this, one thread

// out[i] = f(x[i]); out has x's shape and dtype.
template <class F> Tensor map(const Tensor& x_in, F f) {
  Tensor x = x_in.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    const int64_t n = x.numel();
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) po[i] = store<T>(f(load(px[i])));
  });
  return out;
}

// out[i] = f(a[i], b[i]); a and b have the same shape and dtype (callers check).
template <class F> Tensor map2(const Tensor& a_in, const Tensor& b_in, F f) {
  Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    const int64_t n = a.numel();
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) po[i] = store<T>(f(load(pa[i]), load(pb[i])));
  });
  return out;
}

// out[i] = f(a[i], b[i], c[i]); all the same shape and dtype.
template <class F> Tensor map3(const Tensor& a_in, const Tensor& b_in, const Tensor& c_in, F f) {
  Tensor a = a_in.contiguous(), b = b_in.contiguous(), c = c_in.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    const T* pc = c.data<T>();
    T* po = out.data<T>();
    const int64_t n = a.numel();
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) po[i] = store<T>(f(load(pa[i]), load(pb[i]), load(pc[i])));
  });
  return out;
}

}  // namespace hg::cpu
