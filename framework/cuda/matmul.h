#pragma once
// framework/cuda/matmul.h — matmul and linear on GPU tensors (the CPU side:
// framework/cpu/gemm.h): the ladder's best rung for the dtype, or cuBLAS (cuda/gemm/matmul.h;
// which one, and TF32, are the settings of cuda/gemm/backend.h).
#include <cstdint>
#include <vector>

#include "cuda/gemm/backend.h"
#include "framework/tensor/tensor.h"

namespace hg::cuda {

// C (M, N) = op(A)·op(B) (+ bias on every row), in A's dtype; F16/BF16 accumulate in F32 and
// round once.
Tensor gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Tensor& A, const Tensor& B,
            const Tensor& bias = Tensor());
// A batch of products, out (..., M, N): matrix i = op(A_i)·op(B_i), where A_i starts a_off[i]
// elements into A and B_i b_off[i] into B (a broadcast operand repeats an offset). One GEMM
// per matrix, the same GEMM as gemm() above; F16/BF16 accumulate in F32 and round once.
Tensor batched_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Tensor& A, const Tensor& B,
                    const std::vector<int64_t>& a_off, const std::vector<int64_t>& b_off, const Shape& out);

}  // namespace hg::cuda
