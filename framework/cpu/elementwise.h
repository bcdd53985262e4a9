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
#include <algorithm>
#include <cstdint>
#include <vector>

#include "framework/cpu/copy.h"

#include "framework/tensor/tensor.h"

namespace hg::cpu {

constexpr int64_t kParallelMin = 1 << 15;  // elements: below this, one thread

// Σ_{i<n} term(i) in double, the same bits for any number of threads: fixed chunks of 4096
// terms are summed each in order, then the chunk sums in chunk order. (An OpenMP
// reduction(+) adds the threads' partial sums in whatever order they finish, so the last
// bits of a loss could change from run to run.)
template <class F> double deterministic_sum(int64_t n, F term) {
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> part(static_cast<size_t>(chunks));
#pragma omp parallel for if (n > kParallelMin)
  for (int64_t c = 0; c < chunks; ++c) {
    double s = 0;
    for (int64_t i = c * kChunk; i < std::min(n, (c + 1) * kChunk); ++i) s += term(i);
    part[c] = s;
  }
  double total = 0;
  for (double p : part) total += p;
  return total;
}

// Loops over n elements of up to three inputs: out[i] = f(in0[i], ...); out may be in0 (an
// update in place). F32 and F64 run the plain loop. F16/BF16 go block by block: widen a block
// of each input to F32 (convert_kernel.h: F16C or AVX-512 when the CPU has them), apply f,
// round the block back — the same numbers as element by element, without a conversion call
// per element.
template <class T, size_t NIn, class F>
void map_n(const T* const (&in)[NIn], T* out, int64_t n, F f) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (NIn == 1) out[i] = f(in[0][i]);
      else if constexpr (NIn == 2) out[i] = f(in[0][i], in[1][i]);
      else out[i] = f(in[0][i], in[1][i], in[2][i]);
    }
  } else {
    constexpr int64_t kBlock = 1024;
    const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t i0 = b * kBlock, len = std::min(kBlock, n - i0);
      float buf[NIn][kBlock];
      float res[kBlock];
      for (size_t k = 0; k < NIn; ++k)
        convert_block(in[k] + i0, dtype_of<T>::value, buf[k], DType::F32, len);
      for (int64_t i = 0; i < len; ++i) {
        if constexpr (NIn == 1) res[i] = f(buf[0][i]);
        else if constexpr (NIn == 2) res[i] = f(buf[0][i], buf[1][i]);
        else res[i] = f(buf[0][i], buf[1][i], buf[2][i]);
      }
      convert_block(res, DType::F32, out + i0, dtype_of<T>::value, len);
    }
  }
}

// out[i] = f(x[i]); out has x's shape and dtype.
template <class F> Tensor map(const Tensor& x_in, F f) {
  Tensor x = x_in.contiguous();
  Tensor out = Tensor::empty(x.shape(), x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in[1] = {x.data<T>()};
    map_n<T, 1>(in, out.data<T>(), x.numel(), f);
  });
  return out;
}

// out[i] = f(a[i], b[i]); a and b have the same shape and dtype (callers check).
template <class F> Tensor map2(const Tensor& a_in, const Tensor& b_in, F f) {
  Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in[2] = {a.data<T>(), b.data<T>()};
    map_n<T, 2>(in, out.data<T>(), a.numel(), f);
  });
  return out;
}

// out[i] = f(a[i], b[i], c[i]); all the same shape and dtype.
template <class F> Tensor map3(const Tensor& a_in, const Tensor& b_in, const Tensor& c_in, F f) {
  Tensor a = a_in.contiguous(), b = b_in.contiguous(), c = c_in.contiguous();
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* in[3] = {a.data<T>(), b.data<T>(), c.data<T>()};
    map_n<T, 3>(in, out.data<T>(), a.numel(), f);
  });
  return out;
}

}  // namespace hg::cpu
