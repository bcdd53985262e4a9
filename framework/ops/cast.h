#pragma once
// framework/ops/cast.h — changing a tensor's dtype or device, with gradients.
//
//   y = cast(x, F16)      forward: round every value to F16 (nearest even)
//                         backward: dL/dx = cast(dL/dy, x.dtype) — the gradient goes back
//                         to x's own dtype, so an F32 parameter used in F16 math still gets
//                         an F32 gradient (the heart of mixed precision).
// Tensor::to(DType) and Tensor::to(Device) call these.
#include "framework/tensor/tensor.h"

namespace hg {

Tensor cast(const Tensor& x, DType dtype);         // x itself when already that dtype
Tensor to_device(const Tensor& x, Device device);  // x itself when already there

}  // namespace hg
