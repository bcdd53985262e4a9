#include "framework/train/f16_sgd.h"

#include "framework/dtype/half.h"
#include "framework/ops/ops.h"

namespace hg::train {

namespace {
float f16(float x) { return float(half(x)); }  // round to the nearest F16, back to float
}  // namespace

// On the GPU the same three roundings come from in-place ops, each of which computes in F32
// and rounds once to F16: mul_ (momentum·buf), add_ (+ g), add_ with −lr (p − lr·buf).
void sgd_step_f16(const std::vector<Tensor>& params, std::vector<Tensor>& bufs, float lr, float momentum) {
  if (bufs.empty()) bufs.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    const bool first = !bufs[i].defined();
    if (first) bufs[i] = Tensor::zeros(p.shape(), DType::F16, p.device());
    if (p.device() == Device::CUDA) {
      if (first) {
        copy_(bufs[i], g);
      } else {
        mul_(bufs[i], momentum);
        add_(bufs[i], g);
      }
      add_(p, bufs[i], -lr);
      continue;
    }
    half* pd = p.data<half>();
    half* bd = bufs[i].data<half>();
    const half* gd = g.data<half>();
    for (int64_t k = 0, n = p.numel(); k < n; ++k) {
      const float gk = float(gd[k]);
      const float b = first ? gk : f16(f16(momentum * float(bd[k])) + gk);
      bd[k] = half(b);
      pd[k] = half(float(pd[k]) - lr * b);
    }
  }
}

}  // namespace hg::train
