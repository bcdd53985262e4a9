#pragma once
// The loss scaler's passes over the gradients on the GPU (framework/amp/unscale.cpp is the
// CPU side, PyTorch's _amp_foreach_non_finite_check_and_unscale_ the model).
//
// `found_inf` is one int in device memory that the caller zeroes once, passes to the kernel
// of every gradient, and reads back once: one device-to-host copy per step, not one per
// parameter. A kernel only ever writes 1 into it (never 0), so the order of the writes does
// not matter.
#include "cuda/ops/dtype.h"

namespace hg::cuda {

// g <- g · inv_scale (F32 math, rounded once to g's type); *found_inf = 1 when any element
// was inf or NaN before the multiply.
void launch_unscale_and_check(DType dt, void* grad, int64_t n, float inv_scale, int* found_inf);

// *found_inf = 1 when any element of x is inf or NaN; x is not changed.
void launch_check_finite(DType dt, const void* x, int64_t n, int* found_inf);

// *max_abs = max(*max_abs, the largest finite |x_i|): the bits of a float ≥ 0 order like
// the bits of an int, so an integer atomicMax does it. `max_abs` is one float on the device
// that the caller sets to 0 first.
void launch_max_abs_finite(DType dt, const void* x, int64_t n, float* max_abs);

}  // namespace hg::cuda
