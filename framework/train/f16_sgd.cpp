#include "framework/train/f16_sgd.h"

#include "framework/ops/ops.h"

namespace hg::train {

// The three roundings are three in-place ops, each of which computes in F32 and rounds once
// to F16, on either device: mul_ (momentum·buf), add_ (+ g), add_ with −lr (p − lr·buf).
// Element by element that is b = f16(f16(momentum·b) + g); p = f16(p − lr·b): the ops give
// the same bits, and on the CPU they convert whole blocks with the F16 instructions.
void sgd_step_f16(const std::vector<Tensor>& params, std::vector<Tensor>& bufs, float lr, float momentum) {
  if (bufs.empty()) bufs.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    const bool first = !bufs[i].defined();
    if (first) {
      bufs[i] = Tensor::zeros(p.shape(), DType::F16, p.device());
      copy_(bufs[i], g);
    } else {
      mul_(bufs[i], momentum);
      add_(bufs[i], g);
    }
    add_(p, bufs[i], -lr);
  }
}

}  // namespace hg::train
