// framework/cuda/softmax.cpp — softmax and cross entropy on GPU tensors (softmax.h).
#include "framework/cuda/softmax.h"

#include "cuda/ops/softmax.h"
#include "cuda/runtime/memory.h"
#include "framework/cuda/common.h"

namespace hg::cuda {

Tensor softmax(const Tensor& x, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  need_gpu_contiguous(op, x, "x");
  int64_t outer, n, inner;
  split_at(x.shape(), dim, outer, n, inner);
  Tensor y = gpu_empty(x.shape(), x.dtype());
  launch_softmax_forward(kernel_dtype(op, x), x.raw_data(), y.raw_data(), outer, n, inner, log);
  return y;
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy_in, int64_t dim, bool log) {
  const char* op = log ? "log_softmax backward" : "softmax backward";
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous(op, dy, "dy");
  int64_t outer, n, inner;
  split_at(y.shape(), dim, outer, n, inner);
  Tensor dx = gpu_empty(y.shape(), y.dtype());
  launch_softmax_backward(kernel_dtype(op, y), y.raw_data(), dy.raw_data(), dx.raw_data(), outer, n, inner, log);
  return dx;
}

std::shared_ptr<Storage> upload_targets(const std::vector<int32_t>& targets) {
  auto s = Storage::allocate(targets.size() * sizeof(int32_t), Device::CUDA);
  copy_host_to_device(s->data, targets.data(), targets.size() * sizeof(int32_t));
  return s;
}

Tensor cross_entropy(const Tensor& logits, const Storage& targets) {
  need_gpu_contiguous("cross_entropy", logits, "logits");
  Tensor loss = gpu_empty({}, logits.dtype());
  launch_cross_entropy_forward(kernel_dtype("cross_entropy", logits), logits.raw_data(),
                               static_cast<const int32_t*>(targets.data), logits.size(0), logits.size(1),
                               loss.raw_data());
  return loss;
}

Tensor cross_entropy_backward(const Tensor& logits, const Storage& targets, const Tensor& dloss_in) {
  // the kernel reads dloss as a device scalar of the logits' dtype
  Tensor dloss = dloss_in.detach().to(logits.dtype()).to(Device::CUDA);
  Tensor dx = gpu_empty(logits.shape(), logits.dtype());
  launch_cross_entropy_backward(kernel_dtype("cross_entropy", logits), logits.raw_data(),
                                static_cast<const int32_t*>(targets.data), dloss.raw_data(), logits.size(0),
                                logits.size(1), dx.raw_data());
  return dx;
}

}  // namespace hg::cuda
