// matmul.h: pick a rung (or cuBLAS) and handle transposed operands.
//
// The cuBLAS handle is created on first use and kept for the life of the process (creating
// one costs milliseconds and allocates workspace, too much per call). It is the one piece of
// hidden state here, and it is only touched under --gemm cublas.
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/matmul.h"
#include "cuda/ops/transpose.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"

#include <mutex>

namespace hg::cuda {
namespace {

GemmBackend g_backend = GemmBackend::Ladder;

cublasHandle_t cublas_handle() {
  static std::once_flag once;
  static cublasHandle_t handle = nullptr;
  std::call_once(once, [] { HG_CUBLAS_CHECK(cublasCreate(&handle)); });
  return handle;
}

// A row-major (rows, cols) operand, transposed into a temporary when asked: returns the
// pointer to use and sets `owned` to the temporary to free afterwards.
template <class T>
const T* untransposed(const T* X, bool trans, int rows, int cols, Dtype dt, void*& owned) {
  owned = nullptr;
  if (!trans) return X;
  owned = device_malloc(size_t(rows) * cols * sizeof(T));
  transpose(dt, X, cols, rows, owned);  // stored (cols, rows) -> (rows, cols)
  return static_cast<const T*>(owned);
}

}  // namespace

void set_gemm_backend(GemmBackend backend) { g_backend = backend; }
GemmBackend gemm_backend() { return g_backend; }
const char* gemm_backend_name(GemmBackend backend) { return backend == GemmBackend::Ladder ? "ladder" : "cublas"; }

void matmul_f32(bool trans_a, bool trans_b, int M, int N, int K, const float* A, const float* B, float* C) {
  if (g_backend == GemmBackend::Cublas) {
    // Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ (see 00_cublas.cu).
    const float alpha = 1.0f, beta = 0.0f;
    HG_CUBLAS_CHECK(cublasSgemm(cublas_handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                N, M, K, &alpha, B, trans_b ? K : N, A, trans_a ? M : K, &beta, C, N));
    return;
  }
  void *ta, *tb;
  const float* a = untransposed(A, trans_a, M, K, Dtype::F32, ta);
  const float* b = untransposed(B, trans_b, K, N, Dtype::F32, tb);
  gemm::gemm_04_register_blocked(M, N, K, a, b, C);
  device_free(ta);  // freed blocks are reused only by later work on the same stream: safe
  device_free(tb);
}

void matmul_f16(bool trans_a, bool trans_b, int M, int N, int K, const __half* A, const __half* B, float* C) {
  if (g_backend == GemmBackend::Cublas) {
    const float alpha = 1.0f, beta = 0.0f;
    HG_CUBLAS_CHECK(cublasGemmEx(cublas_handle(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 N, M, K, &alpha, B, CUDA_R_16F, trans_b ? K : N, A, CUDA_R_16F, trans_a ? M : K, &beta,
                                 C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return;
  }
  void *ta, *tb;
  const __half* a = untransposed(A, trans_a, M, K, Dtype::F16, ta);
  const __half* b = untransposed(B, trans_b, K, N, Dtype::F16, tb);
  static const bool has_cp_async = device_info(0).cp_async();
  if (has_cp_async) gemm::gemm_07_wmma_cp_async_double_buffered(M, N, K, a, b, C);
  else gemm::gemm_06_wmma_block_tiled_skewed(M, N, K, a, b, C);
  device_free(ta);
  device_free(tb);
}

}  // namespace hg::cuda
