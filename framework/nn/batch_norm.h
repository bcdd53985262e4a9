#pragma once
// BatchNorm2d: normalise each channel over (N, H, W), then scale and shift.
//   training: y = γ · (x − mean_batch) / √(var_batch + eps) + β
//             running = (1 − momentum) · running + momentum · batch statistic
//             (the running variance uses the unbiased batch variance, as PyTorch does)
//   eval:     y = γ · (x − running_mean) / √(running_var + eps) + β
//   x, y (N, C, H, W)   γ, β, running_mean, running_var (C)
// γ and β are parameters; the running statistics are buffers: saved in checkpoints, never
// trained. PyTorch's num_batches_tracked is not kept (it only matters when momentum is None).
#include "framework/nn/module.h"

namespace hg::nn {

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t channels, double eps = 1e-5, double momentum = 0.1);
  Tensor forward(const Tensor& x) override;  // (N, C, H, W) -> (N, C, H, W)
  std::string describe() const override;

  Tensor weight;        // γ (C), starts at 1
  Tensor bias;          // β (C), starts at 0
  Tensor running_mean;  // (C), starts at 0
  Tensor running_var;   // (C), starts at 1
  const int64_t channels;
  const double eps, momentum;
};

}  // namespace hg::nn
