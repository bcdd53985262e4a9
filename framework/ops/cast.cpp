#include "framework/ops/cast.h"

#include "framework/autograd/node.h"
#include "framework/cpu/copy.h"
#include "framework/cuda/copy.h"
#include "framework/ops/check.h"

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
      y = cuda::cast(x.detach().contiguous(), dtype);  // one kernel, RNE
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
  switch (device) {
    case Device::CUDA: y = cuda::upload(x.detach().contiguous()); break;
    case Device::CPU: y = cuda::download(x.detach()); break;  // refuses a non-contiguous view
  }
  // d(move(x))/dx = 1: the gradient moves back to where x lives.
  Device from = x.device();
  return record("to_device", y, {x}, [from](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{to_device(dy, from)};
  });
}

}  // namespace hg
