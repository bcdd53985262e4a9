// Known-answer cases of what the simulated GPU (GPGPU-Sim) gets wrong and tests/gpu/gpusim.sh
// mends, each a few lines of CUDA of the kind that failed in halfgrad's kernels, with the
// answer of a GPU (tests/gpu/README.md, "On a simulated GPU", lists them with what the
// simulator does unmended):
//   __float2half_rn      F32 -> F16 rounds ties to even (the simulator: away from zero),
//                        against the host's conversion (cuda_fp16.h) over every exponent,
//                        the ties and their neighbours, subnormals, overflow, inf and NaN
//   cudaMemcpy2D         device to device between two different pitches (the simulator
//                        aborts the program: one pitch only)
// On a GPU they pass too: they are the hardware's answers.
#include "tests/gpu/gpu_test.h"

#include "cuda/runtime/check.h"

#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

__global__ void to_half_kernel(const float* x, uint16_t* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __half_as_ushort(__float2half_rn(x[i]));
}

void f32_to_f16_ties(hg::test::Checker& t) {
  std::vector<uint32_t> bits;
  for (uint32_t e = 0; e < 256; ++e)  // every exponent: zero, subnormal, normal, overflow, inf/NaN
    for (uint32_t low : {0x0u, 0x1u, 0xfffu, 0x1000u, 0x1001u, 0x1fffu, 0x2000u, 0x3000u, 0x400000u, 0x401000u, 0x7fffffu})
      for (uint32_t sign : {0u, 0x80000000u}) bits.push_back(sign | e << 23 | low);
  for (uint32_t u = 0x33000000u - 2; u <= 0x33000000u + 2; ++u) bits.push_back(u);  // half the smallest subnormal
  for (uint32_t u = 0x477fefffu - 2; u <= 0x477fefffu + 2; ++u) bits.push_back(u);  // 65519.99..65520: inf starts
  for (uint32_t k = 0; k < 1024; ++k) bits.push_back(0x33800000u + k * 0x2000u + 0x1000u);  // ties among subnormals
  const int n = int(bits.size());
  std::vector<float> x(bits.size());
  std::memcpy(x.data(), bits.data(), bits.size() * 4);
  hg::test::DeviceBuffer<float> dx(x);
  hg::test::DeviceBuffer<uint16_t> dy(bits.size());
  to_half_kernel<<<(n + 255) / 256, 256>>>(dx.ptr, dy.ptr, n);
  HG_CUDA_CHECK(cudaGetLastError());
  const std::vector<uint16_t> got = dy.to_host();
  int bad = 0;
  std::string first;
  for (int i = 0; i < n; ++i) {
    const __half h = __float2half_rn(x[size_t(i)]);  // the host's: CUDA's own rounding
    uint16_t want;
    std::memcpy(&want, &h, 2);
    if (got[size_t(i)] != want && bad++ == 0) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "first: 0x%08x gave 0x%04x, want 0x%04x", bits[size_t(i)], got[size_t(i)], want);
      first = buf;
    }
  }
  t.expect("__float2half_rn = the host's on " + std::to_string(n) + " F32 values (2049 -> 2048)", bad == 0,
           bad == 0 ? "" : std::to_string(bad) + " differ; " + first);
}

void memcpy2d_two_pitches(hg::test::Checker& t) {
  // a (3, 5) float matrix copied into the top left of a (4, 8) one, and back out
  std::vector<float> a(15), wide(32, -1.0f);
  for (int i = 0; i < 15; ++i) a[size_t(i)] = float(i + 1);
  hg::test::DeviceBuffer<float> da(a), dw(wide), back(15);
  HG_CUDA_CHECK(cudaMemcpy2D(dw.ptr, 8 * 4, da.ptr, 5 * 4, 5 * 4, 3, cudaMemcpyDeviceToDevice));
  HG_CUDA_CHECK(cudaMemcpy2D(back.ptr, 5 * 4, dw.ptr, 8 * 4, 5 * 4, 3, cudaMemcpyDeviceToDevice));
  std::vector<float> want_wide = wide;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 5; ++c) want_wide[size_t(r * 8 + c)] = a[size_t(r * 5 + c)];
  t.exact("cudaMemcpy2D device to device, pitch 20 -> 32 bytes", dw.to_host(), want_wide, 8);
  t.exact("cudaMemcpy2D device to device, pitch 32 -> 20 bytes", back.to_host(), a, 5);
}

void run(hg::test::Checker& t) {
  f32_to_f16_ties(t);
  memcpy2d_two_pitches(t);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
