// framework/cuda/copy.cpp — moving and converting tensors on the GPU (copy.h).
#include "framework/cuda/copy.h"

#include <fmt/format.h>

#include "cuda/ops/elementwise.h"
#include "cuda/ops/strided.h"
#include "cuda/runtime/memory.h"
#include "framework/cuda/common.h"
#include "framework/ops/check.h"

namespace hg::cuda {

Tensor upload(const Tensor& x) {
  Tensor y = gpu_empty(x.shape(), x.dtype());
  copy_host_to_device(y.raw_data(), x.raw_data(), x.nbytes());
  return y;
}

Tensor download(const Tensor& x) {
  if (!x.is_contiguous())
    op_error("to", "a non-contiguous CUDA tensor cannot be copied to the CPU; make it contiguous "
                   "on the GPU first");
  Tensor y = Tensor::empty(x.shape(), x.dtype(), Device::CPU);
  copy_device_to_host(y.raw_data(), x.raw_data(), x.nbytes());
  return y;
}

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  need_gpu_contiguous("cast", x, "x");
  Tensor y = gpu_empty(x.shape(), dtype);
  launch_cast(kernel_dtype("cast", x), x.raw_data(), kernel_dtype("cast", y), y.raw_data(), x.numel());
  return y;
}

Tensor clone(const Tensor& x) {
  if (x.device() == Device::CUDA && !x.is_contiguous()) return contiguous(x);  // a fresh copy too
  need_gpu_contiguous("clone", x, "x");
  Tensor y = gpu_empty(x.shape(), x.dtype());
  copy_device_to_device(y.raw_data(), x.raw_data(), x.nbytes());
  return y;
}

Tensor contiguous(const Tensor& x) {
  if (x.device() != Device::CUDA) op_error("contiguous", "x is on the CPU");
  if (x.dim() > kMaxViewDims)
    op_error("contiguous", fmt::format("views of more than {} dims are not supported on the GPU",
                                       kMaxViewDims));
  Tensor y = gpu_empty(x.shape(), x.dtype());
  // raw_data() is already advanced to the view's first element (its offset).
  launch_copy_strided(kernel_dtype("contiguous", x), x.raw_data(),
                      make_strided_view(x.shape(), x.strides()), y.raw_data(), x.numel());
  return y;
}

void copy_(Tensor& dst, const Tensor& src_in) {
  need_gpu_contiguous("copy_", dst, "dst");
  Tensor src = src_in.detach();
  if (src.device() == Device::CPU) {  // convert on the CPU (any dtype), then one upload
    Tensor s = src.to(dst.dtype()).contiguous();
    copy_host_to_device(dst.raw_data(), s.raw_data(), dst.nbytes());
    return;
  }
  need_gpu_contiguous("copy_", src, "src");
  if (src.dtype() == dst.dtype())
    copy_device_to_device(dst.raw_data(), src.raw_data(), dst.nbytes());
  else
    launch_cast(kernel_dtype("copy_", src), src.raw_data(), kernel_dtype("copy_", dst), dst.raw_data(),
                dst.numel());
}

void copy_into_view(Tensor& view, const Tensor& src_in) {
  Tensor src = src_in.detach().contiguous();
  need_gpu_contiguous("copy_into_view", src, "src");
  if (view.device() != Device::CUDA) op_error("copy_into_view", "the view is on the CPU");
  if (src.shape() != view.shape() || src.dtype() != view.dtype())
    op_error("copy_into_view", fmt::format("src is {} {}, the view {} {}: they must match", dtype_name(src.dtype()),
                                           shape_str(src.shape()), dtype_name(view.dtype()), shape_str(view.shape())));
  if (view.dim() > kMaxViewDims)
    op_error("copy_into_view", fmt::format("views of more than {} dims are not supported on the GPU", kMaxViewDims));
  for (int64_t d = 0; d < view.dim(); ++d)
    if (view.strides()[d] == 0 && view.shape()[d] > 1)
      op_error("copy_into_view", fmt::format("the view {} repeats elements (stride 0 in dim {}): a write into it "
                                             "would be ambiguous", shape_str(view.shape()), d));
  // raw_data() is the view's first element (its offset applied)
  launch_copy_into_strided(kernel_dtype("copy_into_view", src), src.raw_data(), view.raw_data(),
                           make_strided_view(view.shape(), view.strides()), src.numel());
}

}  // namespace hg::cuda
