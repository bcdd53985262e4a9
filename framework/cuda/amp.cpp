// framework/cuda/amp.cpp — the loss scaler's passes on the GPU (amp.h).
#include "framework/cuda/amp.h"

#include "cuda/ops/amp.h"
#include "cuda/runtime/memory.h"
#include "framework/cuda/common.h"

namespace hg::cuda {

bool unscale_and_check(const std::vector<Tensor>& grads, float inv_scale, bool check_only) {
  Tensor flag = gpu_empty({1}, DType::F32);  // 4 bytes on the GPU, used as one int
  int* found = static_cast<int*>(flag.raw_data());
  device_memset_zero(found, sizeof(int));
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    need_gpu_contiguous(check_only ? "grads_have_inf_or_nan" : "unscale_", g, "gradient");
    if (check_only)
      launch_check_finite(kernel_dtype("grads_have_inf_or_nan", g), g.raw_data(), g.numel(), found);
    else
      launch_unscale_and_check(kernel_dtype("unscale_", g), g.raw_data(), g.numel(), inv_scale, found);
  }
  int host = 0;
  copy_device_to_host(&host, found, sizeof(int));  // waits for the kernels above
  return host != 0;
}

double max_abs_finite(const std::vector<Tensor>& xs) {
  Tensor out = gpu_empty({1}, DType::F32);
  device_memset_zero(out.raw_data(), sizeof(float));
  for (const Tensor& x : xs) {
    if (!x.defined()) continue;
    need_gpu_contiguous("max_abs_finite", x, "x");
    launch_max_abs_finite(kernel_dtype("max_abs_finite", x), x.raw_data(), x.numel(), f32_data(out));
  }
  return out.item();
}

}  // namespace hg::cuda
