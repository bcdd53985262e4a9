// cuBLASLt's FP8 GEMM on our row-major matrices (cuda/gemm/cublaslt_fp8.h says what and why).
//
// The layout, worked out. cuBLASLt is column-major, and its FP8 GEMM takes only "TN":
//
//   D_lt (m, n) = op(A_lt) · op(B_lt)     op(A_lt) = A_ltᵀ (transa = T), op(B_lt) = B_lt (transb = N)
//
// with A_lt stored (k, m) and B_lt stored (k, n), column-major: both K-contiguous. Our matrices
// are row-major, and a row-major (R, C) matrix is the same bytes as a column-major (C, R) one:
//
//   our A (M, K) row-major  =  column-major (K, M), leading dimension K
//   our B (N, K) row-major  =  column-major (K, N), leading dimension K
//   our D (M, N) row-major  =  column-major (N, M), leading dimension N  =  Dᵀ
//
// We want D = A · Bᵀ, i.e. Dᵀ (N, M) = B · Aᵀ. In cuBLASLt's terms: m = N, n = M, k = K,
//
//   D_lt (N, M) = A_ltᵀ · B_lt     with A_lt = our B as column-major (K, N), transposed -> (N, K)
//                                       B_lt = our A as column-major (K, M), as it is  -> (K, M)
//
// so cuBLASLt's A is our B and its B is our A: the pointers, the types and the scales swap
// places, and no byte moves. (Both operands K-contiguous is exactly why FP8 wants TN: each
// thread's fragment of A and of B is then a run of consecutive bytes, as in rung 09.)
#include "cuda/gemm/cublaslt_fp8.h"

#include <stdexcept>
#include <string>

#include "cuda/runtime/check.h"

namespace hg::cuda::gemm {

namespace {

const char* type_name(cudaDataType_t t) {
  return t == CUDA_R_8F_E4M3 ? "E4M3" : t == CUDA_R_8F_E5M2 ? "E5M2" : "not FP8";
}

}  // namespace

CublasLtFp8Gemm::CublasLtFp8Gemm(cublasLtHandle_t handle, int M, int N, int K, cudaDataType_t a_type,
                                 cudaDataType_t b_type, const float* scale_a, const float* scale_b, void* workspace,
                                 size_t workspace_bytes, bool fast_accum)
    : handle_(handle), workspace_(workspace), workspace_bytes_(workspace_bytes) {
  const std::string what = "cuBLASLt FP8 GEMM D (" + std::to_string(M) + ", " + std::to_string(N) + ") = A " +
                           type_name(a_type) + " (" + std::to_string(M) + ", " + std::to_string(K) + ") · Bᵀ " +
                           type_name(b_type);
  if (M <= 0 || N <= 0 || K <= 0 || K % 16 || N % 4)
    throw std::invalid_argument(what + ": needs K a multiple of 16 (rows of 16-byte multiples) and N of 4 (D's rows)");
  for (cudaDataType_t t : {a_type, b_type})
    if (t != CUDA_R_8F_E4M3 && t != CUDA_R_8F_E5M2)
      throw std::invalid_argument(what + ": the inputs must be CUDA_R_8F_E4M3 or CUDA_R_8F_E5M2");
  try {
    describe(M, N, K, a_type, b_type, scale_a, scale_b, fast_accum, what);
  } catch (...) {
    release();  // a constructor that throws gets no destructor: free what was made
    throw;
  }
}

void CublasLtFp8Gemm::describe(int M, int N, int K, cudaDataType_t a_type, cudaDataType_t b_type,
                               const float* scale_a, const float* scale_b, bool fast_accum, const std::string& what) {
  HG_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  HG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  HG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  const int8_t fast = fast_accum ? 1 : 0;
  HG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
  // The scales: device pointers, read when the GEMM runs. cuBLASLt's A is our B: its A scale is our B's.
  HG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_b, sizeof scale_b));
  HG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_a, sizeof scale_a));

  // cuBLASLt's A is our B, its B our A (the swap explained at the top). C has D's layout and type;
  // with beta = 0 it is never read, and D is passed for it.
  HG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_layout_, b_type, K, N, K));
  HG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_layout_, a_type, K, M, K));
  HG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d_layout_, CUDA_R_32F, N, M, N));

  // The algorithm: cuBLASLt's first choice for these descriptors within our workspace.
  cublasLtMatmulPreference_t pref = nullptr;
  HG_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &workspace_bytes_, sizeof workspace_bytes_);
  cublasLtMatmulHeuristicResult_t found{};
  int count = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_layout_, b_layout_, d_layout_, d_layout_, pref, 1, &found,
                                        &count);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || count == 0) {
    std::string msg = what + ": cublasLtMatmulAlgoGetHeuristic found no algorithm (" +
                      (st != CUBLAS_STATUS_SUCCESS ? std::string("cuBLAS status ") + cublasGetStatusString(st)
                                                   : std::string("0 results")) +
                      ")";
    if (a_type == CUDA_R_8F_E5M2 && b_type == CUDA_R_8F_E5M2)
      msg += "; cuBLASLt's FP8 GEMM takes E4M3·E4M3, E4M3·E5M2 and E5M2·E4M3, not E5M2·E5M2";
    msg += " (FP8 GEMMs need sm_89 or later)";
    throw std::runtime_error(msg);
  }
  algo_ = found.algo;
}

CublasLtFp8Gemm::~CublasLtFp8Gemm() { release(); }

void CublasLtFp8Gemm::release() {
  // (Destroying a valid descriptor cannot fail, and a destructor must not throw: no checks.)
  if (d_layout_) cublasLtMatrixLayoutDestroy(d_layout_);
  if (b_layout_) cublasLtMatrixLayoutDestroy(b_layout_);
  if (a_layout_) cublasLtMatrixLayoutDestroy(a_layout_);
  if (op_) cublasLtMatmulDescDestroy(op_);
  d_layout_ = b_layout_ = a_layout_ = nullptr;
  op_ = nullptr;
}

void CublasLtFp8Gemm::run(const void* A, const void* B, float* D) {
  const float alpha = 1.0f, beta = 0.0f;  // host scalars (the default pointer mode)
  HG_CUBLAS_CHECK(cublasLtMatmul(handle_, op_, &alpha, B, a_layout_, A, b_layout_, &beta, D, d_layout_, D, d_layout_,
                                 &algo_, workspace_, workspace_bytes_, /*stream=*/0));
}

}  // namespace hg::cuda::gemm
