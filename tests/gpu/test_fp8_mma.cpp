// GPU test of the FP8 GEMMs against the CPU emulation of the FP8 GEMM (framework/fp8), for
// every pair of formats:
//   rung 09, mma.sync m16n8k32 (cuda/gemm/09_mma_fp8.cu)   E4M3·E4M3, E4M3·E5M2, E5M2·E4M3, E5M2·E5M2
//   cuBLASLt (cuda/gemm/cublaslt_fp8.h), default and       E4M3·E4M3, E4M3·E5M2, E5M2·E4M3;
//   fast accumulation                                      E5M2·E5M2 must be refused, as documented
// Small integers in [-8, 8] (exact in both formats): bit for bit with the emulation, since every
// product and partial sum is exact whatever the order. Random values with per-tensor current
// scaling: within fp8_dot_error_bound (cuda/gemm/validate.h: a 14-bit accumulator truncating
// once per 32 products; the hardware's order and accumulator width are not documented) plus
// the F32 summation bound of the emulation's own sum; cuBLASLt against rung 09 within the sum
// of their two bounds. Below sm_89 both must refuse with a message. Exits 77 without a GPU.
// (No kernels of its own: a .cpp, compiled once by the host compiler.)
#include "tests/gpu/gpu_test.h"

#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/gemm/cublaslt_fp8.h"
#include "cuda/gemm/fp8_mma.h"
#include "cuda/gemm/validate.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"
#include "framework/fp8/fp8_gemm.h"
#include "framework/fp8/scaling.h"
#include "framework/tensor/generator.h"

namespace {

using hg::Tensor;
using hg::test::DeviceBuffer;
using namespace hg::fp8;
using namespace hg::cuda::gemm;

// Two quantized operands on the GPU: A (M, K) and B (N, K) codes, and their scale_inv.
struct Operands {
  const Fp8Tensor &a, &b;
  int M, N, K;
  DeviceBuffer<uint8_t> dA, dB;
  DeviceBuffer<float> scales;  // {scale_inv_a, scale_inv_b}: cuBLASLt reads them on the device
  Operands(const Fp8Tensor& qa, const Fp8Tensor& qb)
      : a(qa), b(qb), M(int(qa.rows())), N(int(qb.rows())), K(int(qa.cols())), dA(qa.codes), dB(qb.codes),
        scales(std::vector<float>{qa.scale_inv[0], qb.scale_inv[0]}) {}
};

std::string pair_name(Format fa, Format fb) { return std::string(format_name(fa)) + "·" + format_name(fb); }
std::string shape_name(int M, int N, int K) {
  return std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K);
}

template <class T>
const T* as(const uint8_t* p) { return reinterpret_cast<const T*>(p); }

// Rung 09 on the operands: the template instance of their two formats.
std::vector<float> rung09(const Operands& o) {
  using E4 = __nv_fp8_e4m3;
  using E5 = __nv_fp8_e5m2;
  DeviceBuffer<float> dC(size_t(o.M) * o.N);
  HG_CUDA_CHECK(cudaMemset(dC.ptr, 0xFF, dC.n * sizeof(float)));  // NaN: a missed entry shows
  const float scale = o.a.scale_inv[0] * o.b.scale_inv[0];
  const bool a4 = o.a.format == Format::E4M3, b4 = o.b.format == Format::E4M3;
  if (a4 && b4) gemm_09_mma_fp8(o.M, o.N, o.K, as<E4>(o.dA.ptr), as<E4>(o.dB.ptr), dC.ptr, scale);
  else if (a4) gemm_09_mma_fp8(o.M, o.N, o.K, as<E4>(o.dA.ptr), as<E5>(o.dB.ptr), dC.ptr, scale);
  else if (b4) gemm_09_mma_fp8(o.M, o.N, o.K, as<E5>(o.dA.ptr), as<E4>(o.dB.ptr), dC.ptr, scale);
  else gemm_09_mma_fp8(o.M, o.N, o.K, as<E5>(o.dA.ptr), as<E5>(o.dB.ptr), dC.ptr, scale);
  return dC.to_host();
}

cudaDataType_t data_type(Format f) { return f == Format::E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

std::vector<float> cublaslt(cublasLtHandle_t lt, void* workspace, const Operands& o, bool fast_accum) {
  DeviceBuffer<float> dC(size_t(o.M) * o.N);
  HG_CUDA_CHECK(cudaMemset(dC.ptr, 0xFF, dC.n * sizeof(float)));
  CublasLtFp8Gemm gemm(lt, o.M, o.N, o.K, data_type(o.a.format), data_type(o.b.format), o.scales.ptr,
                       o.scales.ptr + 1, workspace, kCublasLtWorkspaceBytes, fast_accum);
  gemm.run(o.dA.ptr, o.dB.ptr, dC.ptr);
  return dC.to_host();
}

Tensor small_ints(int64_t R, int64_t C, uint64_t seed) {
  std::vector<float> v(size_t(R * C));
  uint64_t s = seed;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = float(int((s >> 33) % 17) - 8);  // -8..8: exact in E4M3 (4 significant bits) and E5M2 (3)
  }
  return Tensor::from_vector(v, {R, C});
}

Fp8Tensor unscaled(const Tensor& x, Format f) { return quantize(x, f, kPerTensor, {1.0f}); }

// Per element: the FP8 bound around the exact sum, plus the emulation's own F32 summation error.
std::vector<float> error_bound(const Fp8Tensor& qa, const Fp8Tensor& qb) {
  const int M = int(qa.rows()), N = int(qb.rows()), K = int(qa.cols());
  std::vector<float> bound(size_t(M) * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k)
        s += std::fabs(double(decode(qa.codes[size_t(m) * K + k], qa.format)) *
                       double(decode(qb.codes[size_t(n) * K + k], qb.format)));
      s *= double(qa.scale_inv[0]) * double(qb.scale_inv[0]);
      bound[size_t(m) * N + n] = float(fp8_dot_error_bound(K, s) + f32_dot_error_bound(K, s));
    }
  return bound;
}

void check_pair(hg::test::Checker& t, cublasLtHandle_t lt, void* workspace, Format fa, Format fb) {
  const std::string pair = pair_name(fa, fb);
  const bool lt_supported = !(fa == Format::E5M2 && fb == Format::E5M2);

  // small integers, K <= 256: |partial sum| <= 256 · 64 = 2^14, every one exact in F32 and in any
  // accumulator of 14 bits or more: bit for bit, whatever the order
  for (auto [M, N, K] : {std::tuple<int, int, int>{16, 8, 32}, {64, 40, 256}, {128, 96, 256}}) {
    const Fp8Tensor qa = unscaled(small_ints(M, K, 3), fa), qb = unscaled(small_ints(N, K, 4), fb);
    const Operands o(qa, qb);
    const std::vector<float> want = gemm_tn_reference(qa, qb).to_vector();
    const std::string what = pair + " small integers " + shape_name(M, N, K);
    t.exact("09 mma_fp8 " + what, rung09(o), want, size_t(N));
    if (lt_supported) t.exact("cuBLASLt " + what, cublaslt(lt, workspace, o, false), want, size_t(N));
  }

  // random values with per-tensor current scaling (each tensor's amax lands on its format's max)
  hg::Generator gen(5);
  const int M = 256, N = 128, K = hg::test::small_run() ? 256 : 1024;  // (small: under memcheck)
  const Tensor a = Tensor::randn({M, K}, gen), b = Tensor::randn({N, K}, gen);
  const Fp8Tensor qa = quantize(a, fa, kPerTensor, {current_scale(a, fa)});
  const Fp8Tensor qb = quantize(b, fb, kPerTensor, {current_scale(b, fb)});
  const Operands o(qa, qb);
  const std::vector<float> emu = gemm_tn(qa, qb).to_vector(), bound = error_bound(qa, qb);
  const std::string what = pair + " random " + shape_name(M, N, K) + ", per-tensor scales";
  const std::vector<float> r09 = rung09(o);
  t.within("09 mma_fp8 " + what, r09, emu, bound, size_t(N));
  if (!lt_supported) {
    std::string msg;
    try { cublaslt(lt, workspace, o, false); } catch (const std::runtime_error& e) { msg = e.what(); }
    t.expect("cuBLASLt refuses " + pair + " (its documentation: not supported)",
             msg.find("cublasLtMatmulAlgoGetHeuristic") != std::string::npos, msg);
    return;
  }
  std::vector<float> twice(bound.size());
  for (size_t i = 0; i < bound.size(); ++i) twice[i] = 2 * bound[i];
  for (bool fast : {false, true}) {
    const std::string name = std::string("cuBLASLt") + (fast ? " fast-accum " : " ") + what;
    const std::vector<float> got = cublaslt(lt, workspace, o, fast);
    t.within(name, got, emu, bound, size_t(N));
    t.within(name + " [vs rung 09]", got, r09, twice, size_t(N));
  }
}

void run(hg::test::Checker& t) {
  const hg::cuda::DeviceInfo info = hg::cuda::device_info(0);
  cublasLtHandle_t lt;
  HG_CUBLAS_CHECK(cublasLtCreate(&lt));
  DeviceBuffer<uint8_t> workspace(kCublasLtWorkspaceBytes);
  const Fp8Tensor qa = unscaled(small_ints(16, 32, 1), Format::E4M3), qb = unscaled(small_ints(8, 32, 2), Format::E4M3);
  if (info.major * 10 + info.minor < 89) {
    const Operands o(qa, qb);
    std::string msg;
    try { rung09(o); } catch (const std::runtime_error& e) { msg = e.what(); }
    t.expect("below sm_89 the FP8 rung refuses with a message", msg.find("sm_89") != std::string::npos, msg);
    msg.clear();
    try { cublaslt(lt, workspace.ptr, o, false); } catch (const std::runtime_error& e) { msg = e.what(); }
    t.expect("below sm_89 cuBLASLt's FP8 GEMM refuses with a message", msg.find("cuBLASLt FP8") != std::string::npos,
             msg);
  } else {
    for (Format fa : {Format::E4M3, Format::E5M2})
      for (Format fb : {Format::E4M3, Format::E5M2}) check_pair(t, lt, workspace.ptr, fa, fb);
  }
  bool refused = false;
  try {
    const Fp8Tensor ka = unscaled(small_ints(16, 48, 1), Format::E4M3), kb = unscaled(small_ints(8, 48, 2), Format::E4M3);
    rung09(Operands(ka, kb));
  } catch (const std::invalid_argument&) { refused = true; }
  t.expect("09 mma_fp8: K not a multiple of 32 is refused", refused);
  refused = false;
  try {
    const Fp8Tensor ka = unscaled(small_ints(16, 40, 1), Format::E4M3), kb = unscaled(small_ints(8, 40, 2), Format::E4M3);
    cublaslt(lt, workspace.ptr, Operands(ka, kb), false);
  } catch (const std::invalid_argument&) { refused = true; }
  t.expect("cuBLASLt FP8: K not a multiple of 16 is refused", refused);
  HG_CUBLAS_CHECK(cublasLtDestroy(lt));
}

}  // namespace

HG_GPU_TEST_MAIN(run)
