// GPU test of rung 09, FP8 E4M3 on the tensor cores with mma.sync m16n8k32
// (cuda/gemm/09_mma_fp8.cu), against the CPU emulation of the FP8 GEMM (framework/fp8):
// bit-exact on small integers (every product and partial sum exact), within F32 summation
// bounds on random values with per-tensor scales (the hardware's order and accumulator width
// are not documented). Exits 77 without a GPU; says so and checks the refusal below sm_89.
#include "tests/gpu/gpu_test.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/gemm/fp8_mma.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"
#include "framework/fp8/fp8_gemm.h"
#include "framework/fp8/scaling.h"
#include "framework/tensor/generator.h"

namespace {

using hg::Tensor;
using namespace hg::fp8;

// C = scale · A·Bᵀ on the GPU from the codes of two quantized tensors.
std::vector<float> gpu_gemm(const Fp8Tensor& a, const Fp8Tensor& b) {
  const int M = int(a.rows()), N = int(b.rows()), K = int(a.cols());
  hg::cuda::DeviceTemp dA(a.codes.size()), dB(b.codes.size()), dC(size_t(M) * N * sizeof(float));
  hg::cuda::copy_host_to_device(dA.get(), a.codes.data(), a.codes.size());
  hg::cuda::copy_host_to_device(dB.get(), b.codes.data(), b.codes.size());
  hg::cuda::gemm::gemm_09_mma_fp8_e4m3(M, N, K, dA.as<uint8_t>(), dB.as<uint8_t>(), dC.as<float>(),
                                       a.scale_inv[0] * b.scale_inv[0]);
  std::vector<float> c(size_t(M) * N);
  hg::cuda::copy_device_to_host(c.data(), dC.get(), c.size() * sizeof(float));
  return c;
}

Tensor small_ints(int64_t R, int64_t C, uint64_t seed) {
  std::vector<float> v(size_t(R * C));
  uint64_t s = seed;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = float(int((s >> 33) % 17) - 8);
  }
  return Tensor::from_vector(v, {R, C});
}

}  // namespace

static void run(hg::test::Checker& t) {
  const hg::cuda::DeviceInfo info = hg::cuda::device_info(0);
  if (info.major * 10 + info.minor < 89) {
    std::string msg;
    try {
      Fp8Tensor q = quantize(small_ints(16, 32, 1), Format::E4M3, kPerTensor, {1.0f});
      gpu_gemm(q, quantize(small_ints(8, 32, 2), Format::E4M3, kPerTensor, {1.0f}));
    } catch (const std::runtime_error& e) { msg = e.what(); }
    t.expect("below sm_89 the FP8 rung refuses with a message", msg.find("sm_89") != std::string::npos, msg);
    return;
  }
  // small integers, K <= 256: |partial sum| <= 256 · 64 = 2^14, every one exact in F32 and in any
  // accumulator of 14 bits or more: bit for bit, whatever the order
  for (auto [M, N, K] : {std::tuple<int, int, int>{16, 8, 32}, {64, 40, 256}, {128, 96, 256}}) {
    Fp8Tensor qa = quantize(small_ints(M, K, 3), Format::E4M3, kPerTensor, {1.0f});
    Fp8Tensor qb = quantize(small_ints(N, K, 4), Format::E4M3, kPerTensor, {1.0f});
    t.exact("FP8 mma m16n8k32, small integers " + std::to_string(M) + "x" + std::to_string(N) + "x" +
                std::to_string(K),
            gpu_gemm(qa, qb), gemm_tn_reference(qa, qb).to_vector(), size_t(N));
  }
  // random values with per-tensor current scaling: the F32 sums differ only in order
  hg::Generator gen(5);
  const int M = 256, N = 128, K = 1024;
  Tensor a = Tensor::randn({M, K}, gen), b = Tensor::randn({N, K}, gen);
  Fp8Tensor qa = quantize(a, Format::E4M3, kPerTensor, {current_scale(a, Format::E4M3)});
  Fp8Tensor qb = quantize(b, Format::E4M3, kPerTensor, {current_scale(b, Format::E4M3)});
  // The bound per element: a 14-bit accumulator that truncates once per mma (K/32 times), each
  // time losing less than 2^-13 of a partial sum no larger than Σ|a·b|: 32 · 2^-13 = 2^-8 of
  // Σ_k |a_k·b_k| · scales for K = 1024. F32 accumulation is far inside it.
  std::vector<float> bound(size_t(M) * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double s = 0;
      for (int k = 0; k < K; ++k)
        s += std::fabs(double(decode(qa.codes[size_t(m) * K + k], Format::E4M3)) *
                       double(decode(qb.codes[size_t(n) * K + k], Format::E4M3)));
      bound[size_t(m) * N + n] = float(s * qa.scale_inv[0] * qb.scale_inv[0] * (K / 32) * 0x1p-13);
    }
  t.within("FP8 mma m16n8k32, random 256x128x1024, per-tensor scales", gpu_gemm(qa, qb),
           gemm_tn(qa, qb).to_vector(), bound, size_t(N));
  bool refused = false;
  try {
    gpu_gemm(quantize(small_ints(16, 48, 1), Format::E4M3, kPerTensor, {1.0f}),
             quantize(small_ints(8, 48, 2), Format::E4M3, kPerTensor, {1.0f}));
  } catch (const std::invalid_argument&) { refused = true; }
  t.expect("K not a multiple of 32 is refused", refused);
}

HG_GPU_TEST_MAIN(run)
