#pragma once
// framework/cuda/copy.h — moving and converting tensors on the GPU (the CPU side:
// framework/cpu/copy.h). Tensor in, Tensor out; autograd stays in the ops (framework/ops/cast.cpp,
// shape.cpp, elementwise.cpp).
#include "framework/tensor/tensor.h"

namespace hg::cuda {

// A contiguous CPU tensor copied to the GPU, and back (the same dtype, the same bytes).
Tensor upload(const Tensor& x);
Tensor download(const Tensor& x);  // x contiguous on the GPU
// x converted to `dtype` on the GPU (RNE, one kernel); x itself when the dtypes match.
Tensor cast(const Tensor& x, DType dtype);
// A fresh copy of x (a view is gathered into row-major memory).
Tensor clone(const Tensor& x);
// A row-major copy of any view on the GPU (a transpose, an expand, a slice of a slice).
Tensor contiguous(const Tensor& x);
// dst (contiguous, on the GPU) = src, from any device, any dtype.
void copy_(Tensor& dst, const Tensor& src);
// The elements of a view on the GPU (a narrow's window, a transpose) = src, a GPU tensor of
// the same shape and dtype: a scatter (cuda/ops/strided.h). A view that repeats elements (an
// expand) is refused.
void copy_into_view(Tensor& view, const Tensor& src);

}  // namespace hg::cuda
