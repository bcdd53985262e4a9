// framework/dtype against NVIDIA's own conversions: the host code of cuda_fp16.h, cuda_bf16.h
// and cuda_fp8.h (what __float2half_rn, __float2bfloat16_rn and __nv_cvt_float_to_fp8 do,
// compiled here for the CPU). A second, vendor-written reference beside the ones in
// test_dtype_reference.h: it pins the FP8 overflow modes (__NV_SATFINITE / __NV_NOSAT) and
// the FP8 NaN code (0x7f for any NaN) to what CUDA produces.
// Needs the CUDA headers: in a build without CUDA the tests exit 77 (skipped) and say why.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if __has_include(<cuda_fp8.h>)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#define HG_HAVE_CUDA_HEADERS 1
#else
#define HG_HAVE_CUDA_HEADERS 0
#endif

#include "framework/dtype/bfloat16.h"
#include "framework/dtype/fp8.h"
#include "framework/dtype/half.h"
#include "tests/unit/test_dtype_reference.h"

#if HG_HAVE_CUDA_HEADERS
namespace {

// Every 257th float32 pattern, plus the floats around every FP8 value and midpoint.
std::vector<float> inputs() {
  std::vector<float> v;
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 257) v.push_back(ref::float_of(uint32_t(u)));
  for (uint32_t code = 0; code < 256; ++code)
    for (float c : {hg::e4m3_to_float(uint8_t(code)), hg::e5m2_to_float(uint8_t(code))}) {
      if (!std::isfinite(c)) continue;
      float next_e4 = hg::e4m3_to_float(uint8_t(code + 1)), next_e5 = hg::e5m2_to_float(uint8_t(code + 1));
      for (float m : {c, (c + next_e4) / 2, (c + next_e5) / 2}) {
        if (!std::isfinite(m)) continue;
        v.push_back(m);
        v.push_back(std::nextafter(m, -INFINITY));
        v.push_back(std::nextafter(m, INFINITY));
      }
    }
  for (float s : {464.0f, 480.0f, 61440.0f, 65520.0f, INFINITY, -INFINITY, NAN, -NAN})
    v.push_back(s);
  return v;
}

}  // namespace

TEST_CASE("dtype vs CUDA headers: float -> FP8 E4M3/E5M2 in both overflow modes, FP16 and BF16") {
  const std::vector<float> xs = inputs();
  struct Check {
    const char* what;
    ref::Mismatches bad;
  } checks[6] = {{"E4M3 saturating", {}},  {"E4M3 non-saturating", {}}, {"E5M2 saturating", {}},
                 {"E5M2 non-saturating", {}}, {"FP16", {}},             {"BF16", {}}};
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < int64_t(xs.size()); ++i) {
    const float x = xs[size_t(i)];
    using hg::Fp8Overflow;
    // FP8: the same code for every input, NaN included (both write 0x7f for any NaN).
    if (__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) != hg::float_to_e4m3(x, Fp8Overflow::Saturate))
      checks[0].bad.add(uint64_t(i));
    if (__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3) != hg::float_to_e4m3(x, Fp8Overflow::NonSaturating))
      checks[1].bad.add(uint64_t(i));
    if (__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2) != hg::float_to_e5m2(x, Fp8Overflow::Saturate))
      checks[2].bad.add(uint64_t(i));
    if (__nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2) != hg::float_to_e5m2(x, Fp8Overflow::NonSaturating))
      checks[3].bad.add(uint64_t(i));
    // FP16, BF16: CUDA's host code returns one canonical NaN (0x7fff) for any NaN, so only
    // NaN-ness is compared; halfgrad keeps the sign and the top payload bits, as F16C does.
    __half h = __float2half_rn(x);
    __nv_bfloat16 b = __float2bfloat16_rn(x);
    uint16_t hb, bb;
    std::memcpy(&hb, &h, 2);
    std::memcpy(&bb, &b, 2);
    if (std::isnan(x) ? !std::isnan(hg::half_bits_to_float(hb)) || !std::isnan(hg::half_bits_to_float(hg::float_to_half_bits(x)))
                      : hb != hg::float_to_half_bits(x))
      checks[4].bad.add(uint64_t(i));
    if (std::isnan(x) ? !std::isnan(hg::bf16_bits_to_float(bb)) || !std::isnan(hg::bf16_bits_to_float(hg::float_to_bf16_bits(x)))
                      : bb != hg::float_to_bf16_bits(x))
      checks[5].bad.add(uint64_t(i));
  }
  for (Check& c : checks) {
    if (c.bad.count) {
      float x = xs[c.bad.first];
      std::printf("%s: first mismatch at float %s (%.9g); %llu mismatches\n", c.what,
                  ref::hex(ref::bits_of(x), 8).c_str(), double(x),
                  (unsigned long long)c.bad.count.load());
    }
    INFO(c.what, ", ", xs.size(), " inputs");
    CHECK(c.bad.count == 0);
  }
}

TEST_CASE("dtype vs CUDA headers: FP8 -> float for all 256 codes of E4M3 and E5M2") {
  int bad = 0;
  for (uint32_t code = 0; code < 256; ++code) {
    for (bool e4m3 : {true, false}) {
      __half_raw hr = __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(code), e4m3 ? __NV_E4M3 : __NV_E5M2);
      float cuda = hg::half_bits_to_float(hr.x);  // every FP8 value is exactly an FP16 value
      float ours = e4m3 ? hg::e4m3_to_float(uint8_t(code)) : hg::e5m2_to_float(uint8_t(code));
      bool ok = std::isnan(cuda) ? std::isnan(ours)
                                 : ref::bits_of(cuda) == ref::bits_of(ours);
      if (!ok) {
        if (bad++ == 0)
          std::printf("%s code 0x%02x: CUDA %.9g, halfgrad %.9g\n", e4m3 ? "E4M3" : "E5M2", code,
                      double(cuda), double(ours));
      }
    }
  }
  CHECK(bad == 0);
}
#else
namespace {
void require_cuda_headers_or_skip() {
  std::printf("SKIP: built without the CUDA toolkit headers (cuda_fp8.h), so NVIDIA's "
              "conversions are not available to compare with\n");
  std::fflush(stdout);
  std::exit(77);
}
}  // namespace

TEST_CASE("dtype vs CUDA headers: float -> FP8 E4M3/E5M2 in both overflow modes, FP16 and BF16") {
  require_cuda_headers_or_skip();
}
TEST_CASE("dtype vs CUDA headers: FP8 -> float for all 256 codes of E4M3 and E5M2") {
  require_cuda_headers_or_skip();
}
#endif
