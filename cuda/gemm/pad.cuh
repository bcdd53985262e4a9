#pragma once
// Zero padding for the tensor-core rungs (05-07), whose kernels work on whole tiles only.
//
// If M, N, K are multiples of the kernel's tile (gm, gn, gk) and the buffers are aligned for
// the kernels' wide accesses (16-byte uint4 / cp.async loads, 32-byte WMMA fragment loads and
// stores), the kernel runs on the caller's buffers. Otherwise (an odd size, or a view that
// starts a few elements into its storage) A and B are copied into zero-filled buffers of the rounded-up sizes, the
// kernel runs there, and the top-left M x N block of the padded C is copied back. The padded
// rows and columns contribute products with a zero factor, i.e. exact zeros, so the M x N
// result is the same as with guarded loads. The copies are strided cudaMemcpy2D calls; the
// buffers come from the caching allocator, so repeated odd-sized calls do not hit cudaMalloc.
#include "cuda/gemm/layout.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/memory.h"

#include <cuda_fp16.h>

#include <cstdint>

namespace hg::cuda::gemm {

// 32 bytes: what load_matrix_sync / store_matrix_sync need, and more than the 16 of uint4.
inline bool aligned_for_wmma(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 32 == 0; }

template <class Launch>
void with_zero_padding(int M, int N, int K, int gm, int gn, int gk, const __half* A, const __half* B,
                       float* C, Launch launch) {
  if (M % gm == 0 && N % gn == 0 && K % gk == 0 && aligned_for_wmma(A) && aligned_for_wmma(B) &&
      aligned_for_wmma(C)) {
    launch(M, N, K, A, B, C);
    return;
  }
  const int Mp = round_up(M, gm), Np = round_up(N, gn), Kp = round_up(K, gk);
  const size_t h = sizeof(__half), f = sizeof(float);
  auto* Ap = static_cast<__half*>(device_malloc(size_t(Mp) * Kp * h));  // (Mp, Kp)
  auto* Bp = static_cast<__half*>(device_malloc(size_t(Kp) * Np * h));  // (Kp, Np)
  auto* Cp = static_cast<float*>(device_malloc(size_t(Mp) * Np * f));   // (Mp, Np)
  HG_CUDA_CHECK(cudaMemset(Ap, 0, size_t(Mp) * Kp * h));
  HG_CUDA_CHECK(cudaMemset(Bp, 0, size_t(Kp) * Np * h));
  //                          dst, dst pitch, src, src pitch, width in bytes, rows
  HG_CUDA_CHECK(cudaMemcpy2D(Ap, Kp * h, A, K * h, K * h, M, cudaMemcpyDeviceToDevice));
  HG_CUDA_CHECK(cudaMemcpy2D(Bp, Np * h, B, N * h, N * h, K, cudaMemcpyDeviceToDevice));
  launch(Mp, Np, Kp, Ap, Bp, Cp);
  HG_CUDA_CHECK(cudaMemcpy2D(C, N * f, Cp, Np * f, N * f, M, cudaMemcpyDeviceToDevice));
  device_free(Ap);
  device_free(Bp);
  device_free(Cp);
}

}  // namespace hg::cuda::gemm
