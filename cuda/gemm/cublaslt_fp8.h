#pragma once
// cuBLASLt's FP8 GEMM: the library reference for rung 09 (cuda/gemm/fp8_mma.h), computing the
// same thing,
//
//   D (M, N) F32 = scale_a · scale_b · A (M, K) · Bᵀ      A (M, K), B (N, K) FP8, row-major
//
// with scale_a, scale_b device floats (the scale_inv of per-tensor scaling: cuBLASLt reads them
// when the GEMM runs, so a recipe can update them on the GPU without a copy to the host).
//
// What cuBLASLt takes (cuBLAS documentation, cublasLtMatmul, FP8 section):
//   - sm_89 or later, CUBLAS_COMPUTE_32F, F32 scale type;
//   - the "TN" layout: its A transposed, its B not (cublaslt_fp8.cpp works out what that
//     means for our row-major matrices: exactly the K-contiguous A and B above);
//   - leading dimensions of A and B a multiple of 16 bytes: K % 16 == 0 here;
//   - the input pairs E4M3·E4M3, E4M3·E5M2 and E5M2·E4M3. E5M2·E5M2 is NOT supported:
//     the plan's constructor then throws, naming cublasLtMatmulAlgoGetHeuristic (tested on a
//     GPU by tests/gpu/test_fp8_mma.cpp). Rung 09 does all four pairs.
//
// The plan: the descriptors (with the scale pointers) and the algorithm are chosen once per
// shape and types (the choice, cublasLtMatmulAlgoGetHeuristic, costs host time that would
// otherwise be timed with every call), then run() launches. The handle and the workspace
// belong to the caller, created where the reader sees them:
//
//   cublasLtHandle_t lt;  HG_CUBLAS_CHECK(cublasLtCreate(&lt));
//   void* ws = device_malloc(kCublasLtWorkspaceBytes);
//   CublasLtFp8Gemm gemm(lt, M, N, K, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, d_scale_a, d_scale_b, ws,
//                        kCublasLtWorkspaceBytes);
//   gemm.run(dA, dB, dD);
//
// fast_accum: cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM. Off (the default), "intermediate
// results are periodically promoted to a higher precision" (the cuBLAS documentation): an F32
// sum, as DeepSeek-V3's promotion does by hand (framework/fp8/fp8_gemm.h, Accumulate::Promoted).
// On, "on some GPUs" (Hopper) the sum stays in the tensor cores' narrower accumulator: faster,
// less accurate over a long K (Transformer Engine turns it on for the forward GEMM).
#include <cublasLt.h>
#include <cuda_fp8.h>

#include <cstddef>
#include <string>
#include <type_traits>

namespace hg::cuda::gemm {

// 32 MiB: what NVIDIA recommends for Hopper (cuBLAS documentation, cublasSetWorkspace).
inline constexpr size_t kCublasLtWorkspaceBytes = size_t(32) << 20;

// The cudaDataType_t of cuda_fp8.h's types.
template <class T>
constexpr cudaDataType_t fp8_data_type() {
  static_assert(std::is_same_v<T, __nv_fp8_e4m3> || std::is_same_v<T, __nv_fp8_e5m2>, "an FP8 type");
  return std::is_same_v<T, __nv_fp8_e4m3> ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2;
}

class CublasLtFp8Gemm {
 public:
  // a_type, b_type: CUDA_R_8F_E4M3 or CUDA_R_8F_E5M2; scale_a, scale_b: device pointers to one
  // float each, read by every run. Throws std::invalid_argument for a bad shape or type,
  // std::runtime_error when cuBLASLt has no algorithm for them (E5M2·E5M2, a GPU older than
  // sm_89) or a cuBLASLt call fails; each message names the call.
  CublasLtFp8Gemm(cublasLtHandle_t handle, int M, int N, int K, cudaDataType_t a_type, cudaDataType_t b_type,
                  const float* scale_a, const float* scale_b, void* workspace, size_t workspace_bytes,
                  bool fast_accum = false);
  ~CublasLtFp8Gemm();
  CublasLtFp8Gemm(const CublasLtFp8Gemm&) = delete;
  CublasLtFp8Gemm& operator=(const CublasLtFp8Gemm&) = delete;

  // D = scale_a · scale_b · A · Bᵀ. Device pointers; on the default stream, returns without waiting.
  void run(const void* A, const void* B, float* D);

 private:
  void describe(int M, int N, int K, cudaDataType_t a_type, cudaDataType_t b_type, const float* scale_a,
                const float* scale_b, bool fast_accum, const std::string& what);
  void release();

  cublasLtHandle_t handle_;
  void* workspace_;
  size_t workspace_bytes_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr, b_layout_ = nullptr, d_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace hg::cuda::gemm
