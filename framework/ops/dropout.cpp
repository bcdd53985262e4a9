#include "framework/ops/dropout.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "framework/autograd/node.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/elementwise.h"
#include "framework/ops/check.h"

namespace hg {

namespace {

// out = in · keep · scale
Tensor apply_mask(const Tensor& in_t, const std::vector<uint8_t>& keep, double scale) {
  Tensor in = in_t.contiguous();
  Tensor out = Tensor::empty(in.shape(), in.dtype());
  visit_dtype(in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    const T* pi = in.data<T>();
    T* po = out.data<T>();
    const C sc = static_cast<C>(scale);
    const int64_t n = in.numel();
#pragma omp parallel for if (n > cpu::kParallelMin)
    for (int64_t i = 0; i < n; ++i) po[i] = store<T>(keep[i] ? load(pi[i]) * sc : C(0));
  });
  return out;
}

}  // namespace

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  check_defined("dropout", x, "x");
  if (!(p >= 0.0 && p <= 1.0)) op_error("dropout", fmt::format("p must be in [0, 1], got {}", p));
  if (!training || p == 0.0) return x;
  const int64_t n = x.numel();
  auto keep = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) (*keep)[i] = gen.uniform() >= p;  // drawn in order
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  switch (x.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA: {
      // the same mask (drawn above, on the CPU, in order) as an F32 tensor of keep_i · scale
      std::vector<float> m(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) m[i] = (*keep)[i] ? static_cast<float>(scale) : 0.0f;
      Tensor mask = Tensor::from_vector(m, x.shape()).to(Device::CUDA);
      return record("dropout", cuda::apply_mask(x, mask), {x}, [mask](const Tensor& dy, const NeedsGrad&) {
        return std::vector<Tensor>{cuda::apply_mask(dy, mask)};
      });
    }
  }
  Tensor y = apply_mask(x, *keep, scale);
  // ∂y_i/∂x_i = keep_i / (1 − p)
  return record("dropout", y, {x}, [keep, scale](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{apply_mask(dy, *keep, scale)};
  });
}

}  // namespace hg
