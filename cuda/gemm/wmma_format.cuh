#pragma once
// The three input formats of the tensor-core rungs (05-08), as WMMA sees them. Every rung is
// one kernel template over T, the storage type of A and B; this header is the only place
// that says what T means:
//
//   T               format  fragment   what load_matrix_sync gives       before mma_sync
//   __half          F16     16x16x16   F16 values                        nothing to do
//   __nv_bfloat16   BF16    16x16x16   BF16 values                       nothing to do
//   float           TF32    16x16x8    F32 values (32 bits)              round each to TF32
//
// The accumulator is always F32 (16x16, float). TF32 is not a storage type: A and B stay F32
// in memory, and the fragment elements are rounded to 10 mantissa bits with
// wmma::__float_to_tf32, which is PTX's cvt.rna.tf32.f32: round to nearest, ties AWAY from
// zero (framework/dtype/tf32.h: round_to_tf32_rna emulates it on the CPU; halfgrad's TF32
// *format* rounds ties to even). Products of two F16, BF16 or TF32 values are exact in F32
// (at most 11 x 11 = 22 significant bits), so the numerics are: round the inputs, multiply
// exactly, add in F32.
//
// BF16 and TF32 fragments exist on sm_80+ only. In the sm_75 pass of the compiler they are
// not declared, so kCompiled is false there and the kernels compile to a trap; the launchers
// refuse first, with a message (require_tensor_cores).
#include "cuda/gemm/layout.h"
#include "cuda/runtime/device.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <stdexcept>
#include <string>

namespace hg::cuda::gemm {

template <class T>
struct WmmaFormat;

template <>
struct WmmaFormat<__half> {
  static constexpr bool kCompiled = true;  // F16 fragments: sm_70+
  static constexpr const char* kName = "F16";
  static constexpr int kMinMajor = 7;
  static constexpr int K = 16;
  using Operand = __half;
  template <class Frag>
  __device__ static void round(Frag&) {}
};

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
template <>
struct WmmaFormat<__nv_bfloat16> {
  static constexpr bool kCompiled = true;
  static constexpr const char* kName = "BF16";
  static constexpr int kMinMajor = 8;
  static constexpr int K = 16;
  using Operand = __nv_bfloat16;
  template <class Frag>
  __device__ static void round(Frag&) {}
};
template <>
struct WmmaFormat<float> {  // TF32
  static constexpr bool kCompiled = true;
  static constexpr const char* kName = "TF32";
  static constexpr int kMinMajor = 8;
  static constexpr int K = 8;
  using Operand = nvcuda::wmma::precision::tf32;
  template <class Frag>
  __device__ static void round(Frag& f) {
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = nvcuda::wmma::__float_to_tf32(f.x[i]);
  }
};
#else   // device code for sm_75: no BF16 or TF32 fragments
template <>
struct WmmaFormat<__nv_bfloat16> {
  static constexpr bool kCompiled = false;
  static constexpr const char* kName = "BF16";
  static constexpr int kMinMajor = 8;
  static constexpr int K = 16;
};
template <>
struct WmmaFormat<float> {
  static constexpr bool kCompiled = false;
  static constexpr const char* kName = "TF32";
  static constexpr int kMinMajor = 8;
  static constexpr int K = 8;
};
#endif

// The fragments of a rung for input type T.
template <class T>
using FragA = nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, kWmma, kWmma, WmmaFormat<T>::K,
                                     typename WmmaFormat<T>::Operand, nvcuda::wmma::row_major>;
template <class T>
using FragB = nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, kWmma, kWmma, WmmaFormat<T>::K,
                                     typename WmmaFormat<T>::Operand, nvcuda::wmma::row_major>;
template <class T>
using FragC = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, kWmma, kWmma, WmmaFormat<T>::K, float>;

// Host side: true when GPU 0 has this format's tensor cores (asked once per format).
template <class T>
bool has_tensor_cores() {
  static const bool yes = device_info(0).major >= WmmaFormat<T>::kMinMajor;
  return yes;
}
// Throws a message naming the format and the GPU when it has no such tensor cores.
template <class T>
void require_tensor_cores(const char* rung) {
  if (has_tensor_cores<T>()) return;
  const DeviceInfo d = device_info(0);
  throw std::runtime_error(std::string(rung) + ": " + WmmaFormat<T>::kName + " tensor cores need a GPU of compute "
                           "capability " + std::to_string(WmmaFormat<T>::kMinMajor) + ".0 or newer; " + d.name +
                           " is sm_" + std::to_string(d.major) + std::to_string(d.minor));
}

}  // namespace hg::cuda::gemm
