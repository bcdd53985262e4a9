// framework/cuda/matmul.cpp — matmul and linear on GPU tensors (matmul.h), and the F32-output
// GEMM that conv2d shares (common.h).
#include "framework/cuda/matmul.h"

#include <fmt/format.h>

#include <limits>

#include "cuda/gemm/matmul.h"
#include "cuda/ops/elementwise.h"
#include "cuda/runtime/memory.h"
#include "framework/cuda/common.h"
#include "framework/ops/check.h"

namespace hg::cuda {

// F16 and BF16 on the tensor cores; F32 on the SIMT rung, or on TF32 tensor cores when allowed.
void gemm_f32_out(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A,
                  const void* B, float* C) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // an empty sum: all-zero bits are 0.0f
    device_memset_zero(C, static_cast<size_t>(M * N) * sizeof(float));
    return;
  }
  // The ladder's kernels index with 32-bit ints (an element index must fit in an int).
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (M * K > kMax || K * N > kMax || M * N > kMax)
    op_error("matmul", fmt::format("({}x{})·({}x{}) has a matrix of more than 2^31 - 1 elements; "
                                   "the GEMM kernels index with 32-bit ints", M, K, K, N));
  switch (dt) {
    case DType::F32:
      launch_matmul_f32(ta, tb, int(M), int(N), int(K), static_cast<const float*>(A),
                        static_cast<const float*>(B), C);
      return;
    case DType::F16:
      launch_matmul_f16(ta, tb, int(M), int(N), int(K), static_cast<const __half*>(A),
                        static_cast<const __half*>(B), C);
      return;
    case DType::BF16:
      launch_matmul_bf16(ta, tb, int(M), int(N), int(K), static_cast<const __nv_bfloat16*>(A),
                         static_cast<const __nv_bfloat16*>(B), C);
      return;
    case DType::F64: break;
  }
  op_error("matmul", "F64 tensors have no CUDA kernels; cast to F32, or compute in F64 on the CPU");
}

Tensor gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Tensor& A, const Tensor& B,
            const Tensor& bias) {
  need_gpu_contiguous("matmul", A, "a");
  need_gpu_contiguous("matmul", B, "b");
  const DType dt = kernel_dtype("matmul", A);
  // the F32 accumulator: the result itself for F32, a temporary for F16/BF16
  Tensor acc = gpu_empty({M, N}, DType::F32);
  gemm_f32_out(dt, ta, tb, M, N, K, A.raw_data(), B.raw_data(), f32_data(acc));
  if (bias.defined()) {  // + bias on every row, still in F32: the result rounds once
    Tensor b32 = as_f32(bias.detach().contiguous());
    need_gpu_contiguous("linear", b32, "bias");
    launch_binary(Binary::Add, DType::F32, acc.raw_data(), b32.raw_data(), acc.raw_data(),
                  make_broadcast({M, N}, {N}));
  }
  return round_back(acc, A.dtype());
}

Tensor batched_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Tensor& A, const Tensor& B,
                    const std::vector<int64_t>& a_off, const std::vector<int64_t>& b_off, const Shape& out) {
  need_gpu_contiguous("matmul", A, "a");
  need_gpu_contiguous("matmul", B, "b");
  const DType dt = kernel_dtype("matmul", A);
  const size_t es = dtype_size(dt);
  // A loop of the 2-D GEMM, one launch (or a few, with transposed operands) per matrix: for
  // attention's B·H small matrices that is many short launches, the price of reusing the
  // ladder's kernels (a batched kernel, or cublasGemmStridedBatchedEx, would take one).
  Tensor acc = gpu_empty(out, DType::F32);  // (..., M, N) F32 accumulators
  const char* pa = static_cast<const char*>(A.raw_data());
  const char* pb = static_cast<const char*>(B.raw_data());
  for (size_t i = 0; i < a_off.size(); ++i)
    gemm_f32_out(dt, ta, tb, M, N, K, pa + a_off[i] * es, pb + b_off[i] * es, f32_data(acc) + int64_t(i) * M * N);
  return round_back(acc, A.dtype());
}

}  // namespace hg::cuda
