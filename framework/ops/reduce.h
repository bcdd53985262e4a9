#pragma once
// framework/ops/reduce.h — sum and mean, over everything or along one dimension.
//
// Accumulation is in F32 for F16/BF16 tensors (and F32 for F32, double for F64; the
// sum over all elements uses double): adding 10⁴ F16 numbers in F16 would stall as soon as
// the running sum's ULP exceeds the addends. The result is rounded to the input's dtype.
#include "framework/tensor/tensor.h"

namespace hg {

Tensor sum(const Tensor& x);                                      // shape ()
Tensor mean(const Tensor& x);                                     // shape ()
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false);   // (A, B, C) dim 1 -> (A, C)
Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false);

}  // namespace hg
