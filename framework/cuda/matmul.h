#pragma once
// framework/cuda/matmul.h — matmul and linear on GPU tensors (the CPU side:
// framework/cpu/gemm.h): the ladder's best rung for the dtype, or cuBLAS (cuda/gemm/matmul.h;
// which one, and TF32, are the settings of cuda/gemm/backend.h).
#include <cstdint>

#include "cuda/gemm/backend.h"
#include "framework/tensor/tensor.h"

namespace hg::cuda {

// C (M, N) = op(A)·op(B) (+ bias on every row), in A's dtype; F16/BF16 accumulate in F32 and
// round once.
Tensor gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Tensor& A, const Tensor& B,
            const Tensor& bias = Tensor());

}  // namespace hg::cuda
