// framework/cuda/embedding.cpp — embedding on GPU tensors (embedding.h).
#include "framework/cuda/embedding.h"

#include "cuda/ops/embedding.h"
#include "cuda/runtime/memory.h"
#include "framework/cuda/common.h"

namespace hg::cuda {

namespace {
// n host int32 copied to a device temporary (freed when it goes out of scope).
DeviceTemp upload_int32(const std::vector<int32_t>& v) {
  DeviceTemp d(v.size() * sizeof(int32_t));
  copy_host_to_device(d.get(), v.data(), v.size() * sizeof(int32_t));
  return d;
}
}  // namespace

Tensor embedding(const Tensor& weight, const std::vector<int32_t>& ids, const Shape& out_shape) {
  need_gpu_contiguous("embedding", weight, "weight");
  const DType dt = kernel_dtype("embedding", weight);
  const int64_t n = static_cast<int64_t>(ids.size()), C = weight.size(1);
  Tensor y = gpu_empty(out_shape, dt);
  if (n == 0) return y;
  DeviceTemp d_ids = upload_int32(ids);
  launch_embedding_forward(dt, weight.raw_data(), d_ids.as<const int32_t>(), n, C, y.raw_data());
  return y;
}

Tensor embedding_backward(const Tensor& dy_in, const std::vector<int32_t>& ids, int64_t V, int64_t C) {
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("embedding backward", dy, "dy");
  const DType dt = kernel_dtype("embedding backward", dy);
  Tensor dw = gpu_empty({V, C}, dt);
  // each id's positions in order, grouped on the host: the kernel's thread (v, c) sums them
  const IdGroups groups = group_positions_by_id(ids, V);
  DeviceTemp offsets = upload_int32(groups.offsets), positions = upload_int32(groups.positions);
  launch_embedding_backward(dt, dy.raw_data(), offsets.as<const int32_t>(), positions.as<const int32_t>(), V, C,
                            dw.raw_data());
  return dw;
}

}  // namespace hg::cuda
