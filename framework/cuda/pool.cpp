// framework/cuda/pool.cpp — pooling on GPU tensors (pool.h).
#include "framework/cuda/pool.h"

#include "cuda/ops/conv.h"
#include "framework/cuda/common.h"

namespace hg::cuda {

Tensor max_pool2d(const Tensor& x_in, int64_t K, int64_t S, int64_t P, std::shared_ptr<Storage>& argmax) {
  need_gpu_contiguous("max_pool2d", x_in, "x");
  Tensor x = as_f32(x_in);
  const ConvGeometry g = ConvGeometry::of(x.size(1), x.size(2), x.size(3), K, K, S, P);
  const int64_t N = x.size(0);
  Tensor y = gpu_empty({N, g.C, g.out_h(), g.out_w()}, DType::F32);
  argmax = Storage::allocate(static_cast<size_t>(y.numel()) * sizeof(int32_t), Device::CUDA);
  launch_max_pool2d_forward(f32_data(x), N, g, f32_data(y), static_cast<int32_t*>(argmax->data));
  return round_back(y, x_in.dtype());
}

Tensor max_pool2d_backward(const Tensor& dy_in, const Storage& argmax, const Shape& xs, int64_t K,
                           int64_t S, int64_t P) {
  Tensor dy = as_f32(dy_in.contiguous());
  need_gpu_contiguous("max_pool2d backward", dy, "dy");
  const ConvGeometry g = ConvGeometry::of(xs[1], xs[2], xs[3], K, K, S, P);
  Tensor dx = gpu_empty(xs, DType::F32);
  launch_max_pool2d_backward(f32_data(dy), static_cast<const int32_t*>(argmax.data), xs[0], g, f32_data(dx));
  return round_back(dx, dy_in.dtype());
}

Tensor avg_pool2d(const Tensor& x_in, int64_t K, int64_t S, int64_t P) {
  need_gpu_contiguous("avg_pool2d", x_in, "x");
  Tensor x = as_f32(x_in);
  const ConvGeometry g = ConvGeometry::of(x.size(1), x.size(2), x.size(3), K, K, S, P);
  Tensor y = gpu_empty({x.size(0), g.C, g.out_h(), g.out_w()}, DType::F32);
  launch_avg_pool2d_forward(f32_data(x), x.size(0), g, f32_data(y));
  return round_back(y, x_in.dtype());
}

Tensor avg_pool2d_backward(const Tensor& dy_in, const Shape& xs, int64_t K, int64_t S, int64_t P) {
  Tensor dy = as_f32(dy_in.contiguous());
  need_gpu_contiguous("avg_pool2d backward", dy, "dy");
  const ConvGeometry g = ConvGeometry::of(xs[1], xs[2], xs[3], K, K, S, P);
  Tensor dx = gpu_empty(xs, DType::F32);
  launch_avg_pool2d_backward(f32_data(dy), xs[0], g, f32_data(dx));
  return round_back(dx, dy_in.dtype());
}

}  // namespace hg::cuda
