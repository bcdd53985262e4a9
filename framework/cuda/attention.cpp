// framework/cuda/attention.cpp — the causal mask and softmax on GPU tensors (attention.h).
#include "framework/cuda/attention.h"

#include "cuda/ops/attention.h"
#include "framework/cuda/common.h"
#include "framework/cuda/copy.h"

namespace hg::cuda {

namespace {
// (..., T, T) as rows of T.
int64_t rows_of(const Tensor& x) { return x.numel() == 0 ? 0 : x.numel() / x.shape().back(); }
}  // namespace

Tensor causal_mask(const Tensor& x, double above) {
  need_gpu_contiguous("causal_mask", x, "scores");
  Tensor y = gpu_empty(x.shape(), x.dtype());
  launch_causal_mask(kernel_dtype("causal_mask", x), x.raw_data(), y.raw_data(), rows_of(x), x.shape().back(),
                     static_cast<float>(above));
  return y;
}

Tensor causal_softmax(const Tensor& x, double scale) {
  need_gpu_contiguous("causal_softmax", x, "scores");
  Tensor y = gpu_empty(x.shape(), x.dtype());
  launch_causal_softmax_forward(kernel_dtype("causal_softmax", x), x.raw_data(), y.raw_data(), rows_of(x),
                                x.shape().back(), static_cast<float>(scale));
  return y;
}

Tensor causal_softmax_backward(const Tensor& y, const Tensor& dy_in, double scale) {
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("causal_softmax backward", dy, "dy");
  if (dy.dtype() != y.dtype()) dy = cast(dy, y.dtype());  // the kernel reads both as y's type
  Tensor dx = gpu_empty(y.shape(), y.dtype());
  launch_causal_softmax_backward(kernel_dtype("causal_softmax backward", y), y.raw_data(), dy.raw_data(),
                                 dx.raw_data(), rows_of(y), y.shape().back(), static_cast<float>(scale));
  return dx;
}

}  // namespace hg::cuda
