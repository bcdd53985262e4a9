#pragma once
// Elementwise kernels on device buffers: + − × ÷ with broadcasting, with a scalar, the
// gradient reduction of a broadcast input (sum_to), and the in-place helpers optimizers and
// loss scaling use, and the conversion between storage types (launch_cast). All take and
// return device pointers; n counts elements; F32 math.
//
// Backward of the binary ops (the framework composes them from these kernels):
//   y = a + b:  da = sum_to(dy),        db = sum_to(dy)
//   y = a − b:  da = sum_to(dy),        db = sum_to(−dy)
//   y = a · b:  da = sum_to(dy · b),    db = sum_to(dy · a)
//   y = a / b:  da = sum_to(dy / b),    db = sum_to(−dy · a / b²)
#include "cuda/ops/broadcast.h"
#include "cuda/ops/dtype.h"

namespace hg::cuda {

enum class Binary { Add, Sub, Mul, Div };

// y (bc.out_shape) = a (op) b, reading a and b through bc's strides (make_broadcast).
void launch_binary(Binary op, DType dt, const void* a, const void* b, void* y, const Broadcast& bc);

// y = a (op) s, or with scalar_first y = s (op) a (for s − a and s / a).
void launch_binary_scalar(Binary op, DType dt, const void* a, float s, void* y, int64_t n, bool scalar_first = false);

// target[j] = sum of g[i] over every output element i that read target element j, where
// bc.out_shape is g's shape and bc.a_stride the target's broadcast strides (b is unused).
// One block per target element; F32 accumulation.
void launch_sum_to(DType dt, const void* g, const Broadcast& bc, void* target, int64_t target_numel);

void launch_axpy(DType dt, void* dst, const void* src, float alpha, int64_t n);  // dst += alpha · src
void launch_scale(DType dt, void* x, float s, int64_t n);                        // x *= s
// (x = value: device_fill in cuda/runtime/memory.h, which Tensor::full uses too)

// y = x converted between storage types (RNE). F16 -> BF16 goes through F32 (exact), so it
// rounds once.
void launch_cast(DType from, const void* x, DType to, void* y, int64_t n);

}  // namespace hg::cuda
