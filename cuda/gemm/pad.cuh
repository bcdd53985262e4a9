#pragma once
// Zero padding for the tensor-core rungs (05-08), whose kernels work on whole tiles only.
//
// If M, N, K are multiples of the kernel's tile (gm, gn, gk) and the buffers are aligned for
// the kernels' wide accesses (16-byte uint4 / cp.async loads, 32-byte WMMA fragment loads and
// stores), the kernel runs on the caller's buffers. Otherwise (an odd size, or a view that
// starts a few elements into its storage) A and B are copied into zero-filled buffers of the
// rounded-up sizes, the kernel runs there, and the top-left M x N block of the padded C is
// copied back. The padded rows and columns contribute products with a zero factor, i.e. exact
// zeros, so the M x N result is the same as with guarded loads. The copies are strided
// cudaMemcpy2D calls; the buffers come from the caching allocator (DeviceTemp: handed back
// even when a launch throws), so repeated odd-sized calls do not hit cudaMalloc.
//
// T is the storage type of A and B (__half, __nv_bfloat16, or float for TF32).
#include "cuda/gemm/layout.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/memory.h"

#include <cstdint>
#include <stdexcept>
#include <string>

namespace hg::cuda::gemm {

// 32 bytes: what load_matrix_sync / store_matrix_sync need, and more than the 16 of uint4.
inline bool aligned_for_wmma(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 32 == 0; }

template <class T, class Launch>
void with_zero_padding(int M, int N, int K, int gm, int gn, int gk, const T* A, const T* B, float* C,
                       Launch launch) {
  if (!padded_dim_fits(M, gm) || !padded_dim_fits(N, gn) || !padded_dim_fits(K, gk))
    throw std::length_error("GEMM " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K) +
                            ": a size rounded up to whole tiles would pass 2^31 - 1");
  if (M % gm == 0 && N % gn == 0 && K % gk == 0 && aligned_for_wmma(A) && aligned_for_wmma(B) &&
      aligned_for_wmma(C)) {
    launch(M, N, K, A, B, C);
    return;
  }
  const int Mp = round_up(M, gm), Np = round_up(N, gn), Kp = round_up(K, gk);
  const size_t e = sizeof(T), f = sizeof(float);
  DeviceTemp Ap(size_t(Mp) * Kp * e), Bp(size_t(Kp) * Np * e), Cp(size_t(Mp) * Np * f);  // (Mp,Kp) (Kp,Np) (Mp,Np)
  HG_CUDA_CHECK(cudaMemset(Ap.get(), 0, size_t(Mp) * Kp * e));
  HG_CUDA_CHECK(cudaMemset(Bp.get(), 0, size_t(Kp) * Np * e));
  //                          dst, dst pitch, src, src pitch, width in bytes, rows
  HG_CUDA_CHECK(cudaMemcpy2D(Ap.get(), Kp * e, A, K * e, K * e, M, cudaMemcpyDeviceToDevice));
  HG_CUDA_CHECK(cudaMemcpy2D(Bp.get(), Np * e, B, N * e, N * e, K, cudaMemcpyDeviceToDevice));
  launch(Mp, Np, Kp, Ap.as<const T>(), Bp.as<const T>(), Cp.as<float>());
  HG_CUDA_CHECK(cudaMemcpy2D(C, N * f, Cp.get(), Np * f, N * f, M, cudaMemcpyDeviceToDevice));
}

}  // namespace hg::cuda::gemm
