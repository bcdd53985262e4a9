// GPU test of the GEMM ladder: every rung (and cuBLAS, rung 00) against a CPU reference,
//   - small-integer inputs: bit-exact (sums of exact products, exact in any order)
//   - random inputs in [-1, 1]: each entry within the worst-case F32 summation bound
// on odd sizes that divide no tile (1x1x1, 7x13x5, 33x17x129, ...) and on tile-sized ones.
#include "tests/gpu/gpu_test.h"

#include "cuda/gemm/ladder.h"
#include "cuda/gemm/validate.h"
#include "cuda/runtime/check.h"

#include <cuda_fp16.h>

#include <string>
#include <vector>

using namespace hg::cuda::gemm;
using hg::test::DeviceBuffer;

namespace {

struct Shape { int M, N, K; };

std::string label(const char* id, const char* name, Shape s, const char* input) {
  return std::string(id) + " " + name + " " + std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
         std::to_string(s.K) + " " + input;
}

// Full CPU reference; `bound` gets the per-entry allowed error for random inputs.
std::vector<float> reference(const std::vector<float>& A, const std::vector<float>& B, Shape s,
                             std::vector<float>* bound) {
  std::vector<float> C(size_t(s.M) * s.N);
  if (bound) bound->resize(C.size());
  for (int m = 0; m < s.M; ++m)
    for (int n = 0; n < s.N; ++n) {
      const EntryRef r = reference_entry(A.data(), B.data(), s.N, s.K, m, n);
      C[size_t(m) * s.N + n] = static_cast<float>(r.value);
      if (bound) (*bound)[size_t(m) * s.N + n] = static_cast<float>(f32_dot_error_bound(s.K, r.abs_sum)) +
                                                 std::abs(static_cast<float>(r.value)) * 0x1p-24f;  // + final rounding
    }
  return C;
}

// |got - want| <= bound[i] for all i.
void within_bound(hg::test::Checker& t, const std::string& what, const std::vector<float>& got,
                  const std::vector<float>& want, const std::vector<float>& bound) {
  std::vector<float> excess(got.size()), zero(got.size(), 0.0f);
  for (size_t i = 0; i < got.size(); ++i) {
    const float d = std::abs(got[i] - want[i]);
    excess[i] = d <= bound[i] ? 0.0f : d;  // NaN stays NaN and fails
  }
  t.close(what + " [within F32 bound]", excess, zero, 0.0, 0.0);
}

std::vector<__half> to_half(const std::vector<float>& x) {
  std::vector<__half> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = __float2half_rn(x[i]);
  return h;
}
std::vector<float> rounded_to_half(const std::vector<float>& x) {
  std::vector<float> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = __half2float(__float2half_rn(x[i]));
  return r;
}

void check_shape(hg::test::Checker& t, cublasHandle_t handle, Shape s, bool include_slow) {
  for (int input = 0; input < 2; ++input) {
    const bool ints = input == 0;
    const char* in_name = ints ? "small-int" : "random";
    std::vector<float> A(size_t(s.M) * s.K), B(size_t(s.K) * s.N);
    if (ints) { fill_small_integers(A, 1 + s.M); fill_small_integers(B, 2 + s.N); }
    else      { fill_uniform(A, 3 + s.M);        fill_uniform(B, 4 + s.N); }

    // F32 rungs (and cublasSgemm) against the F32 inputs.
    std::vector<float> bound;
    const std::vector<float> ref32 = reference(A, B, s, ints ? nullptr : &bound);
    DeviceBuffer<float> dA(A), dB(B), dC(size_t(s.M) * s.N);
    auto check32 = [&](const char* id, const char* name, const std::vector<float>& got) {
      if (ints) t.exact(label(id, name, s, in_name), got, ref32);
      else      within_bound(t, label(id, name, s, in_name), got, ref32, bound);
    };
    gemm_00_cublas_f32(handle, s.M, s.N, s.K, dA.ptr, dB.ptr, dC.ptr);
    check32("00", "cublas_sgemm", dC.to_host());
    for (const RungF32& r : kRungsF32) {
      if (!include_slow && (r.run == gemm_01_naive || r.run == gemm_02_coalesced)) continue;
      HG_CUDA_CHECK(cudaMemset(dC.ptr, 0xFF, dC.n * sizeof(float)));  // NaN: a missed entry shows
      r.run(s.M, s.N, s.K, dA.ptr, dB.ptr, dC.ptr);
      check32(r.id, r.name, dC.to_host());
    }

    // F16 rungs (and cublasGemmEx) against the F16-rounded inputs: products exact, F32 sums.
    const std::vector<float> A16 = rounded_to_half(A), B16 = rounded_to_half(B);
    const std::vector<float> ref16 = reference(A16, B16, s, ints ? nullptr : &bound);
    DeviceBuffer<__half> hA(to_half(A)), hB(to_half(B));
    auto check16 = [&](const char* id, const char* name, const std::vector<float>& got) {
      if (ints) t.exact(label(id, name, s, in_name), got, ref16);
      else      within_bound(t, label(id, name, s, in_name), got, ref16, bound);
    };
    gemm_00_cublas_f16(handle, s.M, s.N, s.K, hA.ptr, hB.ptr, dC.ptr);
    check16("00", "cublas_gemmex_f16", dC.to_host());
    for (const RungF16& r : kRungsF16) {
      HG_CUDA_CHECK(cudaMemset(dC.ptr, 0xFF, dC.n * sizeof(float)));
      r.run(s.M, s.N, s.K, hA.ptr, hB.ptr, dC.ptr);
      check16(r.id, r.name, dC.to_host());
    }
  }
}

void run(hg::test::Checker& t) {
  cublasHandle_t handle;
  HG_CUBLAS_CHECK(cublasCreate(&handle));
  const Shape shapes[] = {{1, 1, 1}, {7, 13, 5}, {33, 17, 129}, {127, 129, 65},
                          {128, 128, 32}, {256, 256, 256}, {300, 200, 100}, {64, 520, 1000}};
  for (Shape s : shapes) check_shape(t, handle, s, /*include_slow=*/true);
  check_shape(t, handle, {1024, 1024, 1024}, /*include_slow=*/false);
  HG_CUBLAS_CHECK(cublasDestroy(handle));
}

}  // namespace

HG_GPU_TEST_MAIN(run)
