#include "framework/amp/autocast.h"
#include "framework/ops/embedding.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "framework/autograd/node.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/embedding.h"
#include "framework/ops/check.h"

namespace hg {

namespace {

// dW (V, C): row v is the sum of dout's rows at the positions whose id is v.
Tensor embedding_backward(const Tensor& dout_in, const std::vector<int32_t>& ids, int64_t V,
                          int64_t C) {
  Tensor dout = dout_in.contiguous();
  Tensor dw = Tensor::empty({V, C}, dout.dtype());
  const int64_t n = static_cast<int64_t>(ids.size());
  visit_dtype(dout.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = compute_t<T>;
    std::vector<Acc> acc(static_cast<size_t>(V * C), Acc(0));
    const T* g = dout.data<T>();
    // One pass over the positions, B·T·C additions. Threads split the columns into blocks:
    // each keeps the position order for its columns (the same bits on any number of
    // threads) and no two threads write one element.
    constexpr int64_t kCols = 32;
#pragma omp parallel for if (n * C > cpu::kParallelMin)
    for (int64_t c0 = 0; c0 < C; c0 += kCols) {
      const int64_t c1 = std::min(C, c0 + kCols);
      for (int64_t p = 0; p < n; ++p) {
        Acc* row = acc.data() + int64_t(ids[p]) * C;
        const T* src = g + p * C;
        for (int64_t c = c0; c < c1; ++c) row[c] += load(src[c]);
      }
    }
    T* out = dw.data<T>();
    for (int64_t i = 0; i < V * C; ++i) out[i] = store<T>(acc[i]);  // one rounding
  });
  return dw;
}

}  // namespace

Tensor embedding(const Tensor& weight_arg, const std::vector<int32_t>& ids, const Shape& ids_shape) {
  // autocast (framework/amp): the policy leaves a lookup alone (it runs in the table's dtype)
  const Tensor weight = amp::autocast_cast(weight_arg, "embedding");
  check_defined("embedding", weight, "weight");
  check_dim("embedding", weight, "weight", 2, "(V, C)");
  const int64_t V = weight.size(0), C = weight.size(1), n = static_cast<int64_t>(ids.size());
  if (shape_numel(ids_shape) != n)
    op_error("embedding", fmt::format("{} ids do not fill the shape {} ({} positions)", n,
                                      shape_str(ids_shape), shape_numel(ids_shape)));
  for (int64_t p = 0; p < n; ++p)
    if (ids[p] < 0 || ids[p] >= V)
      op_error("embedding", fmt::format("id {} at position {} is not a row of the table: the weight "
                                        "{} has {} rows (ids must be in [0, {}))",
                                        ids[p], p, shape_str(weight.shape()), V, V));
  Tensor w = weight.contiguous();
  Shape out_shape = ids_shape;
  out_shape.push_back(C);
  Tensor y;
  switch (w.device()) {
    case Device::CPU: {
      y = Tensor::empty(out_shape, w.dtype());
      // out[p, :] = weight[ids[p], :] — a copy of C elements per position
      const size_t row = static_cast<size_t>(C) * dtype_size(w.dtype());
      const char* pw = static_cast<const char*>(w.raw_data());
      char* py = static_cast<char*>(y.raw_data());
#pragma omp parallel for if (n * C > cpu::kParallelMin)
      for (int64_t p = 0; p < n; ++p) std::memcpy(py + p * row, pw + ids[p] * row, row);
      break;
    }
    case Device::CUDA:
      y = cuda::embedding(w, ids, out_shape);  // a gather kernel (cuda/ops/embedding.h)
      break;
  }

  // ∂out[p, c]/∂W[v, c] = [ids[p] = v]  =>  dW[v, :] = Σ_{p: ids[p] = v} dout[p, :]
  // (on the GPU the same sums in the same order, without atomics: cuda/ops/embedding.h says why)
  return record("embedding", y, {weight}, [ids, V, C](const Tensor& dout, const NeedsGrad&) {
    if (dout.device() == Device::CUDA) return std::vector<Tensor>{cuda::embedding_backward(dout, ids, V, C)};
    return std::vector<Tensor>{embedding_backward(dout, ids, V, C)};
  });
}

Tensor embedding(const Tensor& weight, const Tensor& ids) {
  check_defined("embedding", ids, "ids");
  std::vector<double> v = ids.to_double_vector();
  std::vector<int32_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != std::floor(v[i]) || std::fabs(v[i]) > 2e9)
      op_error("embedding", fmt::format("id {} at position {} is not an integer", v[i], i));
    out[i] = static_cast<int32_t>(v[i]);
  }
  return embedding(weight, out, ids.shape());
}

}  // namespace hg
