#include "framework/ops/cast.h"

#include "framework/autograd/node.h"
#include "framework/cpu/copy.h"
#include "framework/ops/check.h"

#if HG_WITH_CUDA
#include "cuda/runtime/memory.h"
#include "framework/ops/cuda_ops.h"
#endif

namespace hg {

Tensor cast(const Tensor& x, DType dtype) {
  check_defined("cast", x, "x");
  if (x.dtype() == dtype) return x;
  Tensor y;
  switch (x.device()) {
    case Device::CPU: {
      Tensor xc = x.contiguous();
      y = Tensor::empty(x.shape(), dtype);
      cpu::convert(xc.raw_data(), x.dtype(), y.raw_data(), dtype, x.numel());
      break;
    }
    case Device::CUDA:
#if HG_WITH_CUDA
      y = cuda::cast(x.detach().contiguous(), dtype);  // one kernel, RNE
#else
      no_cuda_build("cast");
#endif
      break;
  }

  // d(cast(x))/dx = 1: the gradient passes through, cast back to x's dtype.
  DType from = x.dtype();
  return record("cast", y, {x}, [from](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{cast(dy, from)};
  });
}

Tensor to_device(const Tensor& x, Device device) {
  check_defined("to", x, "x");
  if (x.device() == device) return x;
  require_cuda();  // throws "built without CUDA; use --device cpu" in a CPU-only build
  Tensor y;
#if HG_WITH_CUDA
  Tensor xc = x.device() == Device::CPU ? x.contiguous() : x;
  if (x.device() == Device::CUDA && !x.is_contiguous())
    op_error("to", "a non-contiguous CUDA tensor cannot be copied to the CPU; make it contiguous "
                   "on the GPU first");
  y = Tensor::empty(x.shape(), x.dtype(), device);
  if (device == Device::CUDA)
    hg::cuda::copy_host_to_device(y.raw_data(), xc.raw_data(), x.nbytes());
  else
    hg::cuda::copy_device_to_host(y.raw_data(), xc.raw_data(), x.nbytes());
#endif
  // d(move(x))/dx = 1: the gradient moves back to where x lives.
  Device from = x.device();
  return record("to_device", y, {x}, [from](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{to_device(dy, from)};
  });
}

}  // namespace hg
