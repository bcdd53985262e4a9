#include "framework/amp/autocast.h"
#include "framework/ops/loss.h"

#include <fmt/format.h>

#include <cmath>

#include "framework/autograd/node.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/copy.h"
#include "framework/cuda/reduce.h"
#include "framework/cuda/softmax.h"
#include "framework/ops/check.h"
#include "framework/ops/elementwise.h"

namespace hg {

Tensor cross_entropy(const Tensor& logits_arg, const std::vector<int32_t>& targets) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor logits_in = amp::autocast_cast(logits_arg, "cross_entropy");
  check_defined("cross_entropy", logits_in, "logits");
  check_dim("cross_entropy", logits_in, "logits", 2, "(N, C)");
  const int64_t N = logits_in.size(0), C = logits_in.size(1);
  if (static_cast<int64_t>(targets.size()) != N)
    op_error("cross_entropy", fmt::format("logits have {} rows (shape {}) but there are {} targets",
                                          N, shape_str(logits_in.shape()), targets.size()));
  for (int64_t n = 0; n < N; ++n)
    if (targets[n] < 0 || targets[n] >= C)
      op_error("cross_entropy", fmt::format("target {} of row {} is not a class id in [0, {})",
                                            targets[n], n, C));
  if (N == 0) op_error("cross_entropy", "empty batch (N = 0)");
  Tensor logits = logits_in.contiguous();
  switch (logits.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA: {
      // the fused kernels: the backward recomputes the softmax from the saved logits
      std::shared_ptr<Storage> ids = cuda::upload_targets(targets);
      Tensor ld = logits.detach();
      return record("cross_entropy", cuda::cross_entropy(ld, *ids), {logits_in},
                    [ld, ids](const Tensor& dy, const NeedsGrad&) {
                      return std::vector<Tensor>{cuda::cross_entropy_backward(ld, *ids, dy)};
                    });
    }
  }

  // forward: per row, lse = m + log Σ e^(x − m); loss_n = lse − x_t. Keep softmax for backward.
  Tensor probs = Tensor::empty({N, C}, logits.dtype() == DType::F64 ? DType::F64 : DType::F32);
  double total = 0;
  visit_dtype(logits.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = compute_t<T>;
    const T* px = logits.data<T>();
    Acc* pp = probs.data<Acc>();
    // one row's loss, and its softmax kept in probs for the backward
    auto row_loss = [&](int64_t n) {
      const T* x = px + n * C;
      Acc* p = pp + n * C;
      Acc m = -INFINITY;
      for (int64_t c = 0; c < C; ++c) m = std::max(m, load(x[c]));
      Acc s = 0;
      for (int64_t c = 0; c < C; ++c) {
        p[c] = std::exp(load(x[c]) - m);
        s += p[c];
      }
      for (int64_t c = 0; c < C; ++c) p[c] /= s;
      // (m − x_t) first: with m = 1000, m + log s would lose log s's digits to m's ULP
      return static_cast<double>((m - load(x[targets[n]])) + std::log(s));
    };
    total = cpu::deterministic_sum(N, row_loss);
  });
  Tensor loss = Tensor::scalar(total / N, logits.dtype());

  // dL/dx_nc = (p_nc − [c = t_n]) / N · dL/dloss
  DType dt = logits.dtype();
  return record("cross_entropy", loss, {logits_in},
                [probs, targets, N, C, dt](const Tensor& dy, const NeedsGrad&) {
                  double g = dy.item() / N;
                  Tensor dx = Tensor::empty({N, C}, dt);
                  visit_dtype(dt, [&](auto tag) {
                    using T = decltype(tag);
                    using Acc = compute_t<T>;
                    const Acc* p = probs.data<Acc>();
                    T* d = dx.data<T>();
#pragma omp parallel for if (N * C > cpu::kParallelMin)
                    for (int64_t n = 0; n < N; ++n)
                      for (int64_t c = 0; c < C; ++c) {
                        Acc onehot = c == targets[n] ? Acc(1) : Acc(0);
                        d[n * C + c] = store<T>((p[n * C + c] - onehot) * static_cast<Acc>(g));
                      }
                  });
                  return std::vector<Tensor>{dx};
                });
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets) {
  check_defined("cross_entropy", targets, "targets");
  if (targets.dim() != 1)
    op_error("cross_entropy", "targets must be one class id per row, shape (N), got " +
                                  shape_str(targets.shape()));
  std::vector<double> v = targets.to_double_vector();
  std::vector<int32_t> ids(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != std::floor(v[i]) || std::fabs(v[i]) > 2e9)
      op_error("cross_entropy", fmt::format("target {} = {} is not an integer class id", i, v[i]));
    ids[i] = static_cast<int32_t>(v[i]);
  }
  return cross_entropy(logits, ids);
}

Tensor mse_loss(const Tensor& pred_arg, const Tensor& target_arg) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor pred = amp::autocast_cast(pred_arg, "mse_loss"), target = amp::autocast_cast(target_arg, "mse_loss");
  check_defined("mse_loss", pred, "pred");
  check_defined("mse_loss", target, "target");
  check_same_device("mse_loss", pred, "pred", target, "target");
  check_same_dtype("mse_loss", pred, "pred", target, "target");
  if (pred.shape() != target.shape())
    op_error("mse_loss", "pred has shape " + shape_str(pred.shape()) + " but target has shape " +
                             shape_str(target.shape()) + "; they must match");
  Tensor p = pred.contiguous(), t = target.contiguous();
  const int64_t n = p.numel();
  if (n == 0) op_error("mse_loss", "empty tensors");
  switch (p.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA: {
      // composed from the GPU ops, in F32 (the CPU sums in double): loss = Σ (p − t)² / n
      const DType dt = p.dtype();
      Tensor d = sub(cuda::cast(p.detach(), DType::F32), cuda::cast(t.detach(), DType::F32));
      Tensor loss = cuda::sum_all("mse_loss", mul(d, d), 1.0 / n);
      return record("mse_loss", dt == DType::F32 ? loss : cuda::cast(loss, dt), {pred, target},
                    [d, n, dt](const Tensor& dy, const NeedsGrad& need) {
                      Tensor dp = mul(d, 2.0 * dy.item() / n);
                      if (dt != DType::F32) dp = cuda::cast(dp, dt);
                      return std::vector<Tensor>{need[0] ? dp : Tensor(), need[1] ? neg(dp) : Tensor()};
                    });
    }
  }
  double total = 0;
  visit_dtype(p.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* pp = p.data<T>();
    const T* pt = t.data<T>();
    total = cpu::deterministic_sum(n, [pp, pt](int64_t i) {
      double d = static_cast<double>(load(pp[i])) - static_cast<double>(load(pt[i]));
      return d * d;
    });
  });
  Tensor loss = Tensor::scalar(total / n, p.dtype());
  // d/dpred mean((p − t)²) = 2(p − t)/n;  d/dtarget = −2(p − t)/n
  return record("mse_loss", loss, {pred, target}, [p, t, n](const Tensor& dy, const NeedsGrad& need) {
    double g = 2.0 * dy.item() / n;
    Tensor dp = cpu::map2(p, t, [g](auto a, auto b) { return (a - b) * static_cast<decltype(a)>(g); });
    Tensor dt;
    if (need[1]) dt = cpu::map(dp, [](auto v) { return -v; });
    return std::vector<Tensor>{need[0] ? dp : Tensor(), dt};
  });
}

}  // namespace hg
