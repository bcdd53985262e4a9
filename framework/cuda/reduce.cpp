// framework/cuda/reduce.cpp — sums on GPU tensors (reduce.h).
#include "framework/cuda/reduce.h"

#include "cuda/ops/reduce.h"
#include "framework/cuda/common.h"

namespace hg::cuda {

Tensor sum_all(const char* op, const Tensor& x, double scale) {
  need_gpu_contiguous(op, x, "x");
  Tensor y = gpu_empty({}, x.dtype());
  launch_sum_all(kernel_dtype(op, x), x.raw_data(), x.numel(), y.raw_data(), static_cast<float>(scale));
  return y;
}

Tensor sum_dim(const char* op, const Tensor& x, int64_t dim, bool keepdim, double scale) {
  need_gpu_contiguous(op, x, "x");
  int64_t outer, n, inner;
  split_at(x.shape(), dim, outer, n, inner);
  Shape out_shape = x.shape();
  if (keepdim) out_shape[dim] = 1;
  else out_shape.erase(out_shape.begin() + dim);
  Tensor y = gpu_empty(out_shape, x.dtype());
  launch_sum_dim(kernel_dtype(op, x), x.raw_data(), outer, n, inner, y.raw_data(), static_cast<float>(scale));
  return y;
}

Tensor sum_backward(const Tensor& dy_in, const Shape& x_shape, int64_t dim, double scale) {
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("sum backward", dy, "dy");
  int64_t outer = 1, n = shape_numel(x_shape), inner = 1;  // dim < 0: all of x is one row
  if (dim >= 0) split_at(x_shape, dim, outer, n, inner);
  Tensor dx = gpu_empty(x_shape, dy.dtype());
  launch_sum_dim_backward(kernel_dtype("sum backward", dy), dy.raw_data(), outer, n, inner, dx.raw_data(),
                          static_cast<float>(scale));
  return dx;
}

}  // namespace hg::cuda
