#pragma once
// framework/cuda/amp.h — the loss scaler's passes over a list of GPU gradients
// (cuda/ops/amp.h; the CPU side is framework/amp/unscale.cpp).
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg::cuda {

// For each defined tensor: g <- g · inv_scale in place (check_only: no change). Returns true
// when any element was inf or NaN. One flag on the GPU for the whole list, read back once.
bool unscale_and_check(const std::vector<Tensor>& grads, float inv_scale, bool check_only);
// The largest finite |value| over every defined tensor of the list (0 when none).
double max_abs_finite(const std::vector<Tensor>& xs);

}  // namespace hg::cuda
