#pragma once
// Device buffers of a given hg::DType for the op tests: upload floats (rounded RNE to
// the storage type), download as floats, and the rounding itself for building references.
#include "cuda/ops/dtype.h"
#include "tests/gpu/gpu_test.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>
#include <vector>

namespace hg::test {

inline float round_to(hg::DType dt, float v) {
  switch (dt) {
    case hg::DType::F32: return v;
    case hg::DType::F16: return __half2float(__float2half_rn(v));
    case hg::DType::BF16: return __bfloat162float(__float2bfloat16_rn(v));
    case hg::DType::F64: break;  // no F64 kernels: the tests never ask
  }
  return v;
}
inline std::vector<float> round_to(hg::DType dt, std::vector<float> v) {
  for (float& x : v) x = round_to(dt, x);
  return v;
}

// Relative tolerance of one rounding to the storage type (half an ULP is the RNE bound;
// we allow 2 ULPs since the reference is rounded too).
inline double storage_rtol(hg::DType dt) {
  return dt == hg::DType::F32 ? 1e-5 : dt == hg::DType::F16 ? 2.0 / 1024 : 2.0 / 128;
}

struct Typed {
  hg::DType dt;
  size_t n;
  DeviceBuffer<unsigned char> buf;
  Typed(hg::DType t, size_t count) : dt(t), n(count), buf(count * hg::dtype_size(t)) {}
  Typed(hg::DType t, const std::vector<float>& v) : Typed(t, v.size()) {
    std::vector<unsigned char> bytes(buf.n);
    for (size_t i = 0; i < n; ++i) {
      if (dt == hg::DType::F32) std::memcpy(&bytes[4 * i], &v[i], 4);
      else if (dt == hg::DType::F16) { __half h = __float2half_rn(v[i]); std::memcpy(&bytes[2 * i], &h, 2); }
      else { __nv_bfloat16 h = __float2bfloat16_rn(v[i]); std::memcpy(&bytes[2 * i], &h, 2); }
    }
    hg::cuda::copy_host_to_device(buf.ptr, bytes.data(), bytes.size());
  }
  void* ptr() { return buf.ptr; }
  std::vector<float> to_host() const {
    std::vector<unsigned char> bytes = buf.to_host();
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
      if (dt == hg::DType::F32) std::memcpy(&v[i], &bytes[4 * i], 4);
      else if (dt == hg::DType::F16) { __half h; std::memcpy(&h, &bytes[2 * i], 2); v[i] = __half2float(h); }
      else { __nv_bfloat16 h; std::memcpy(&h, &bytes[2 * i], 2); v[i] = __bfloat162float(h); }
    }
    return v;
  }
};

inline std::vector<float> uniform(size_t n, float lo, float hi, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  std::vector<float> v(n);
  for (float& x : v) {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;  // xorshift64
    x = lo + (hi - lo) * float((s >> 11) * (1.0 / 9007199254740992.0));
  }
  return v;
}

inline const hg::DType kAllDtypes[] = {hg::DType::F32, hg::DType::F16, hg::DType::BF16};

}  // namespace hg::test
