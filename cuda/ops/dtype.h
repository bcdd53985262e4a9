#pragma once
// The storage types the CUDA ops read and write are the engine's own hg::DType
// (framework/tensor/dtype.h): F32, F16 and BF16. There are no F64 kernels (the framework
// refuses F64 on the GPU before any launch; HG_DISPATCH throws if one gets through). The math
// inside every kernel is F32: a kernel loads F16/BF16, computes in F32 and rounds the result
// back once (RNE), which is what the CPU engine does too, so the two agree up to the order of
// summations.
//
// Buffers are passed as void* with a DType beside them; functions that only exist in F32
// take float*. dtype_size and dtype_name come with the enum.
#include "framework/tensor/dtype.h"

namespace hg::cuda {

using hg::DType;  // so that code `using namespace hg::cuda` sees it too

}  // namespace hg::cuda
