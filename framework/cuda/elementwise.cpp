// framework/cuda/elementwise.cpp — elementwise ops on GPU tensors (elementwise.h).
#include "framework/cuda/elementwise.h"

#include "cuda/runtime/memory.h"
#include "framework/cuda/common.h"

namespace hg::cuda {

Tensor binary(const char* op, Binary kind, const Tensor& a, const Tensor& b, const Shape& out_shape) {
  need_gpu_contiguous(op, a, "a");
  need_gpu_contiguous(op, b, "b");
  Tensor y = gpu_empty(out_shape, a.dtype());
  launch_binary(kind, kernel_dtype(op, a), a.raw_data(), b.raw_data(), y.raw_data(),
                make_broadcast(a.shape(), b.shape()));
  return y;
}

Tensor binary_scalar(const char* op, Binary kind, const Tensor& a, double s, bool scalar_first) {
  need_gpu_contiguous(op, a, "x");
  Tensor y = gpu_empty(a.shape(), a.dtype());
  launch_binary_scalar(kind, kernel_dtype(op, a), a.raw_data(), static_cast<float>(s), y.raw_data(),
                       a.numel(), scalar_first);
  return y;
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  need_gpu_contiguous("sum_to", g, "gradient");
  Tensor out = gpu_empty(shape, g.dtype());
  // a = the target (strides 0 where it was repeated), out_shape = g's shape
  launch_sum_to(kernel_dtype("sum_to", g), g.raw_data(), make_broadcast(shape, g.shape()), out.raw_data(),
                out.numel());
  return out;
}

Tensor unary(const char* op, Unary kind, const Tensor& x) {
  need_gpu_contiguous(op, x, "x");
  Tensor y = gpu_empty(x.shape(), x.dtype());
  launch_unary_forward(kind, kernel_dtype(op, x), x.raw_data(), y.raw_data(), x.numel());
  return y;
}

Tensor unary_backward(Unary kind, const Tensor& dy_in, const Tensor& saved) {
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("unary backward", dy, "dy");
  need_gpu_contiguous("unary backward", saved, "saved input");
  Tensor dx = gpu_empty(dy.shape(), dy.dtype());
  launch_unary_backward(kind, kernel_dtype("unary backward", dy), dy.raw_data(), saved.raw_data(),
                        dx.raw_data(), dy.numel());
  return dx;
}

Tensor pow(const Tensor& x, double p) {
  need_gpu_contiguous("pow", x, "x");
  Tensor y = gpu_empty(x.shape(), x.dtype());
  launch_pow_forward(kernel_dtype("pow", x), x.raw_data(), y.raw_data(), x.numel(), static_cast<float>(p));
  return y;
}

Tensor pow_backward(const Tensor& dy_in, const Tensor& x, double p) {
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("pow backward", dy, "dy");
  need_gpu_contiguous("pow backward", x, "saved input");
  Tensor dx = gpu_empty(dy.shape(), dy.dtype());
  launch_pow_backward(kernel_dtype("pow backward", dy), dy.raw_data(), x.raw_data(), dx.raw_data(),
                      dy.numel(), static_cast<float>(p));
  return dx;
}

void add_(Tensor& dst, const Tensor& src_in, double alpha) {
  need_gpu_contiguous("add_", dst, "dst");
  Tensor src = src_in.detach().to(Device::CUDA).contiguous().to(dst.dtype());
  need_gpu_contiguous("add_", src, "src");
  launch_axpy(kernel_dtype("add_", dst), dst.raw_data(), src.raw_data(), static_cast<float>(alpha),
              dst.numel());
}

void mul_(Tensor& dst, double s) {
  need_gpu_contiguous("mul_", dst, "dst");
  launch_scale(kernel_dtype("mul_", dst), dst.raw_data(), static_cast<float>(s), dst.numel());
}

void fill_(Tensor& dst, double value) {
  need_gpu_contiguous("fill_", dst, "dst");
  kernel_dtype("fill_", dst);  // F64: no kernels, as every other op says
  const Tensor one = Tensor::full({}, value, dst.dtype());  // rounded on the CPU, as the CPU's fill_
  device_fill(dst.raw_data(), one.raw_data(), dtype_size(dst.dtype()), dst.numel());
}

Tensor apply_mask(const Tensor& x_in, const Tensor& mask) {
  // in F32, like the CPU (load, multiply by keep/(1−p) in F32, round once)
  Tensor x = as_f32(x_in.contiguous());
  need_gpu_contiguous("dropout", x, "x");
  Tensor y = gpu_empty(x.shape(), DType::F32);
  launch_binary(Binary::Mul, DType::F32, x.raw_data(), mask.raw_data(), y.raw_data(),
                make_broadcast(x.shape(), mask.shape()));
  return round_back(y, x_in.dtype());
}

}  // namespace hg::cuda
