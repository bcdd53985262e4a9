#pragma once
// Softmax, log-softmax and the fused cross-entropy loss on device buffers, F32 math.
//
// Along one dim of a tensor seen as (outer, d, inner) (reduce.h):
//   softmax(x)_k     = e^(x_k − m) / Σ_j e^(x_j − m)          m = max_j x_j
//   log_softmax(x)_k = x_k − m − log Σ_j e^(x_j − m)
// Backward, with y the forward output:
//   softmax:      dx_k = y_k · (dy_k − Σ_j dy_j y_j)
//   log_softmax:  dx_k = dy_k − e^(y_k) · Σ_j dy_j
#include "cuda/ops/dtype.h"

#include <cstdint>

namespace hg::cuda {

void launch_softmax_forward(DType dt, const void* x, void* y, int64_t outer, int64_t d, int64_t inner, bool log);
void launch_softmax_backward(DType dt, const void* y, const void* dy, void* dx, int64_t outer, int64_t d, int64_t inner, bool log);

// Cross entropy over logits (N, C) and class ids targets (N) (device int32, each in [0, C);
// an id out of range gives a NaN loss instead of a wild read; the framework checks ids first):
//   loss = (1/N) Σ_n [ log Σ_c e^(x_nc) − x_n,t_n ]        written to loss[0] (type dt)
//   dx_nc = dloss · (softmax(x)_nc − [c = t_n]) / N           dloss: device scalar of type dt
void launch_cross_entropy_forward(DType dt, const void* logits, const int32_t* targets, int64_t N, int64_t C, void* loss);
void launch_cross_entropy_backward(DType dt, const void* logits, const int32_t* targets, const void* dloss, int64_t N,
                                   int64_t C, void* dlogits);

}  // namespace hg::cuda
