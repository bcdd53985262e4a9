// GPU test of the GEMM ladder: every rung (and cuBLAS, rung 00) against the CPU, for every
// input format:
//   F32 (rungs 01-04)      vs an F64 reference: bit-exact on small integers, within the F32
//                          summation bound on random inputs
//   F16, BF16, TF32        vs the CPU emulation of the tensor cores: the inputs rounded as the
//   (rungs 05-08)          format does (TF32: ties away from zero, as cvt.rna.tf32.f32),
//                          exact products, F32 sums (hg::cpu::gemm_f16 / gemm_bf16, and sgemm
//                          on the TF32-rounded values). Bit-exact on small integers; on random
//                          inputs within the sum of the two summation bounds (the GPU's and the
//                          emulation's orders differ).
// on odd sizes that divide no tile (1x1x1, 7x13x5, 33x17x129, ...) and on tile-sized ones.
// Then the rounding itself: the device's wmma::__float_to_tf32 against round_to_tf32_rna on
// ties and their neighbours, and a TF32 product whose inputs are ties (A · I = round(A)).
// On a GPU older than sm_80 the BF16 and TF32 launchers must refuse with a message.
// Rung 09 (FP8, cuda/gemm/fp8_mma.h) takes B stored (N, K) and whole tiles: on the small-integer
// inputs of the shapes that fit (M, N, K multiples of 16, 8, 32; the values are exact in E4M3
// and E5M2), every pair of FP8 formats must give the exact sum too, bit for bit (sm_89+; its
// own test, tests/gpu/test_fp8_mma.cpp, has the random inputs and cuBLASLt).
// On a simulated GPU (tests/gpu/gpusim.sh) rung 00 and the shapes above 127x129x65 are left out.
#include "tests/gpu/gpu_test.h"

#include "cuda/gemm/fp8_mma.h"
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/validate.h"
#include "cuda/runtime/check.h"
#include "framework/cpu/gemm.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"
#include "framework/dtype/tf32.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <mma.h>

#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

using namespace hg::cuda::gemm;
using hg::test::DeviceBuffer;

namespace {

struct Shape { int M, N, K; };

std::string label(const char* id, const char* name, const char* format, Shape s, const char* input) {
  return std::string(id) + " " + name + " " + format + " " + std::to_string(s.M) + "x" + std::to_string(s.N) + "x" +
         std::to_string(s.K) + " " + input;
}

// F64 sum and Σ|a b| of every entry, for the operands given.
struct Reference {
  std::vector<float> value;   // the exact sum, rounded once to F32
  std::vector<double> abs_sum;
};
Reference reference(const std::vector<float>& A, const std::vector<float>& B, Shape s) {
  Reference r{std::vector<float>(size_t(s.M) * s.N), std::vector<double>(size_t(s.M) * s.N)};
  for (int m = 0; m < s.M; ++m)
    for (int n = 0; n < s.N; ++n) {
      const EntryRef e = reference_entry(A.data(), B.data(), s.N, s.K, m, n);
      r.value[size_t(m) * s.N + n] = static_cast<float>(e.value);
      r.abs_sum[size_t(m) * s.N + n] = e.abs_sum;
    }
  return r;
}

// ---- the formats: storage, the emulation's operands, cuBLAS, the CPU emulation ------------------
template <class T> struct Format;
template <> struct Format<__half> {
  static constexpr const char* kName = "F16";
  static __half store(float x) { return __float2half_rn(x); }
  static float operand(float x) { return float(hg::half(x)); }  // hg::half: the same RNE bits
  static void cublas(cublasHandle_t h, Shape s, const __half* A, const __half* B, float* C) {
    gemm_00_cublas_f16(h, s.M, s.N, s.K, A, B, C);
  }
  static std::vector<float> emulate(const std::vector<float>& A, const std::vector<float>& B, Shape s) {
    std::vector<hg::half> a, b;
    for (float v : A) a.push_back(hg::half(v));
    for (float v : B) b.push_back(hg::half(v));
    std::vector<float> C(size_t(s.M) * s.N);
    hg::cpu::gemm_f16(false, false, s.M, s.N, s.K, 1.0f, a.data(), s.K, b.data(), s.N, 0.0f, C.data(), s.N);
    return C;
  }
};
template <> struct Format<__nv_bfloat16> {
  static constexpr const char* kName = "BF16";
  static __nv_bfloat16 store(float x) { return __float2bfloat16_rn(x); }
  static float operand(float x) { return float(hg::bfloat16(x)); }
  static void cublas(cublasHandle_t h, Shape s, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C) {
    gemm_00_cublas_bf16(h, s.M, s.N, s.K, A, B, C);
  }
  static std::vector<float> emulate(const std::vector<float>& A, const std::vector<float>& B, Shape s) {
    std::vector<hg::bfloat16> a, b;
    for (float v : A) a.push_back(hg::bfloat16(v));
    for (float v : B) b.push_back(hg::bfloat16(v));
    std::vector<float> C(size_t(s.M) * s.N);
    hg::cpu::gemm_bf16(false, false, s.M, s.N, s.K, 1.0f, a.data(), s.K, b.data(), s.N, 0.0f, C.data(), s.N);
    return C;
  }
};
template <> struct Format<float> {  // TF32
  static constexpr const char* kName = "TF32";
  static float store(float x) { return x; }
  static float operand(float x) { return hg::round_to_tf32_rna(x); }
  static void cublas(cublasHandle_t h, Shape s, const float* A, const float* B, float* C) {
    gemm_00_cublas_tf32(h, s.M, s.N, s.K, A, B, C);
  }
  // TF32 operands times TF32 operands are exact in F32, so an F32 GEMM (sgemm, FMA or not) on
  // the rounded values is the tensor core's arithmetic.
  static std::vector<float> emulate(const std::vector<float>& A, const std::vector<float>& B, Shape s) {
    std::vector<float> a, b, C(size_t(s.M) * s.N);
    for (float v : A) a.push_back(hg::round_to_tf32_rna(v));
    for (float v : B) b.push_back(hg::round_to_tf32_rna(v));
    hg::cpu::sgemm(false, false, s.M, s.N, s.K, 1.0f, a.data(), s.K, b.data(), s.N, 0.0f, C.data(), s.N);
    return C;
  }
};

template <class T>
void check_format(hg::test::Checker& t, cublasHandle_t handle, Shape s, bool ints, const std::vector<float>& A,
                  const std::vector<float>& B, bool sm80) {
  using F = Format<T>;
  const char* in_name = ints ? "small-int" : "random";
  std::vector<T> a(A.size()), b(B.size());
  std::vector<float> Ao(A.size()), Bo(B.size());
  for (size_t i = 0; i < A.size(); ++i) { a[i] = F::store(A[i]); Ao[i] = F::operand(A[i]); }
  for (size_t i = 0; i < B.size(); ++i) { b[i] = F::store(B[i]); Bo[i] = F::operand(B[i]); }
  DeviceBuffer<T> dA(a), dB(b);
  DeviceBuffer<float> dC(size_t(s.M) * s.N);

  if (!sm80 && !std::is_same_v<T, __half>) {  // no BF16 / TF32 tensor cores: the launchers refuse
    for (const RungTC<T>& r : kRungsTC<T>) {
      std::string msg;
      try { r.run(s.M, s.N, s.K, dA.ptr, dB.ptr, dC.ptr); } catch (const std::exception& e) { msg = e.what(); }
      t.expect(label(r.id, r.name, F::kName, s, "refused below sm_80"), msg.find("sm_80") != std::string::npos ||
               msg.find("8.0") != std::string::npos, msg);
    }
    return;
  }
  const std::vector<float> emu = F::emulate(A, B, s);
  const Reference ref = reference(Ao, Bo, s);
  // The GPU's sum and the emulation's sum are each within their bound of the exact one.
  std::vector<float> bound(emu.size());
  for (size_t i = 0; i < bound.size(); ++i)
    bound[i] = float(tensor_core_dot_error_bound(s.K, ref.abs_sum[i]) + f32_dot_error_bound(s.K, ref.abs_sum[i]) +
                     2 * std::fabs(double(ref.value[i])) * 0x1p-24);
  if (ints) t.exact(std::string("CPU emulation ") + F::kName + " small-int = exact sum", emu, ref.value, s.N);
  auto check = [&](const char* id, const char* name, const std::vector<float>& got) {
    if (ints) t.exact(label(id, name, F::kName, s, in_name), got, emu, s.N);
    else t.within(label(id, name, F::kName, s, in_name) + " [vs emulation]", got, emu, bound, s.N);
  };
  if (handle != nullptr) {
    F::cublas(handle, s, dA.ptr, dB.ptr, dC.ptr);
    // (cuBLAS's TF32 mode rounds its inputs its own way: only the exact small-integer case applies)
    if (ints || !std::is_same_v<T, float>) check("00", "cublas_gemmex", dC.to_host());
  }
  for (const RungTC<T>& r : kRungsTC<T>) {
    HG_CUDA_CHECK(cudaMemset(dC.ptr, 0xFF, dC.n * sizeof(float)));  // NaN: a missed entry shows
    r.run(s.M, s.N, s.K, dA.ptr, dB.ptr, dC.ptr);
    check(r.id, r.name, dC.to_host());
  }
}

// Rung 09 with A in TA and B in TB on small integers: the exact sum, bit for bit.
template <class TA, class TB>
void check_fp8_rung(hg::test::Checker& t, Shape s, const std::vector<float>& A, const std::vector<float>& B,
                    const std::vector<float>& exact) {
  std::vector<TA> a(A.size());
  std::vector<TB> bt(B.size());  // B transposed: (N, K)
  for (size_t i = 0; i < A.size(); ++i) a[i] = TA(A[i]);
  for (int k = 0; k < s.K; ++k)
    for (int n = 0; n < s.N; ++n) bt[size_t(n) * s.K + k] = TB(B[size_t(k) * s.N + n]);
  DeviceBuffer<TA> dA(a);
  DeviceBuffer<TB> dB(bt);
  DeviceBuffer<float> dC(size_t(s.M) * s.N);
  HG_CUDA_CHECK(cudaMemset(dC.ptr, 0xFF, dC.n * sizeof(float)));  // NaN: a missed entry shows
  gemm_09_mma_fp8(s.M, s.N, s.K, dA.ptr, dB.ptr, dC.ptr, 1.0f);
  const char* fa = std::is_same_v<TA, __nv_fp8_e4m3> ? "E4M3" : "E5M2";
  const char* fb = std::is_same_v<TB, __nv_fp8_e4m3> ? "E4M3" : "E5M2";
  t.exact(label("09", "mma_fp8", (std::string(fa) + "·" + fb).c_str(), s, "small-int"), dC.to_host(), exact, s.N);
}

void check_shape(hg::test::Checker& t, cublasHandle_t handle, Shape s, bool include_slow, bool sm80, bool sm89) {
  for (int input = 0; input < 2; ++input) {
    const bool ints = input == 0;
    const char* in_name = ints ? "small-int" : "random";
    std::vector<float> A(size_t(s.M) * s.K), B(size_t(s.K) * s.N);
    if (ints) { fill_small_integers(A, 1 + s.M); fill_small_integers(B, 2 + s.N); }
    else      { fill_uniform(A, 3 + s.M);        fill_uniform(B, 4 + s.N); }

    // F32 rungs (and cublasSgemm) against the F64 reference of the F32 inputs.
    const Reference ref = reference(A, B, s);
    std::vector<float> bound(ref.value.size());
    for (size_t i = 0; i < bound.size(); ++i)
      bound[i] = float(f32_dot_error_bound(s.K, ref.abs_sum[i]) + std::fabs(double(ref.value[i])) * 0x1p-24);
    DeviceBuffer<float> dA(A), dB(B), dC(size_t(s.M) * s.N);
    auto check32 = [&](const char* id, const char* name, const std::vector<float>& got) {
      if (ints) t.exact(label(id, name, "F32", s, in_name), got, ref.value, s.N);
      else t.within(label(id, name, "F32", s, in_name) + " [F32 bound]", got, ref.value, bound, s.N);
    };
    if (handle != nullptr) {
      gemm_00_cublas_f32(handle, s.M, s.N, s.K, dA.ptr, dB.ptr, dC.ptr);
      check32("00", "cublas_sgemm", dC.to_host());
    }
    for (const RungF32& r : kRungsF32) {
      if (!include_slow && (r.run == gemm_01_naive || r.run == gemm_02_coalesced)) continue;
      HG_CUDA_CHECK(cudaMemset(dC.ptr, 0xFF, dC.n * sizeof(float)));  // NaN: a missed entry shows
      r.run(s.M, s.N, s.K, dA.ptr, dB.ptr, dC.ptr);
      check32(r.id, r.name, dC.to_host());
    }
    if (ints && sm89 && s.M % 16 == 0 && s.N % 8 == 0 && s.K % 32 == 0) {
      check_fp8_rung<__nv_fp8_e4m3, __nv_fp8_e4m3>(t, s, A, B, ref.value);
      check_fp8_rung<__nv_fp8_e4m3, __nv_fp8_e5m2>(t, s, A, B, ref.value);
      check_fp8_rung<__nv_fp8_e5m2, __nv_fp8_e4m3>(t, s, A, B, ref.value);
      check_fp8_rung<__nv_fp8_e5m2, __nv_fp8_e5m2>(t, s, A, B, ref.value);
    }
    check_format<__half>(t, handle, s, ints, A, B, sm80);
    check_format<__nv_bfloat16>(t, handle, s, ints, A, B, sm80);
    check_format<float>(t, handle, s, ints, A, B, sm80);
  }
}

// ---- the hardware's rounding to TF32 --------------------------------------------------------------
__global__ void float_to_tf32_kernel(const float* x, float* y, int n) {
#if __CUDA_ARCH__ >= 800
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = nvcuda::wmma::__float_to_tf32(x[i]);
#endif
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void check_tf32_rounding(hg::test::Checker& t) {
  // Ties (the 13 dropped bits exactly 1000000000000) and their neighbours, both signs, across
  // binades, subnormals, the largest floats and a carry into the exponent.
  std::vector<float> x;
  for (uint32_t hi : {0x3f800000u, 0x3f802000u, 0x3fffe000u, 0x00002000u, 0x00000000u, 0x7f7fe000u, 0x4b000000u,
                      0x3c123000u, 0x7f000000u, 0x00800000u})
    for (uint32_t low : {0x0fffu, 0x1000u, 0x1001u, 0x0001u, 0x1fffu})
      for (uint32_t sign : {0u, 0x80000000u}) x.push_back(from_bits(sign | hi | low));
  std::vector<float> want;
  int ties_differ = 0;
  for (float v : x) {
    want.push_back(hg::round_to_tf32_rna(v));
    ties_differ += hg::round_to_tf32_rna(v) != hg::round_to_tf32(v);  // ties to even differs on ties
  }
  DeviceBuffer<float> dx(x), dy(x.size());
  float_to_tf32_kernel<<<1, 128>>>(dx.ptr, dy.ptr, int(x.size()));
  HG_CUDA_CHECK(cudaGetLastError());
  t.exact("wmma::__float_to_tf32 = round_to_tf32_rna (" + std::to_string(x.size()) + " values, " +
              std::to_string(ties_differ) + " where ties-to-even differs)",
          dy.to_host(), want);

  // A · I on the TF32 rungs: C must be A rounded ties-away (not ties-to-even). Normal values
  // of moderate size only, so that no product of a rounded value with I's zeros overflows and
  // no subnormal handling of the tensor cores enters the test.
  std::vector<float> normal;
  for (float v : x)
    if (v == 0.0f || (std::fabs(v) > 1e-30f && std::fabs(v) < 1e30f)) normal.push_back(v);
  const Shape s{32, 16, 16};
  std::vector<float> A(size_t(s.M) * s.K), I(size_t(s.K) * s.N, 0.0f);
  for (size_t i = 0; i < A.size(); ++i) A[i] = normal[i % normal.size()];
  for (int k = 0; k < s.K; ++k) I[size_t(k) * s.N + k] = 1.0f;
  std::vector<float> want_c(size_t(s.M) * s.N);
  for (int m = 0; m < s.M; ++m)
    for (int n = 0; n < s.N; ++n) want_c[size_t(m) * s.N + n] = hg::round_to_tf32_rna(A[size_t(m) * s.K + n]);
  DeviceBuffer<float> dA(A), dI(I), dC(want_c.size());
  for (const RungTC<float>& r : kRungsTC<float>) {
    r.run(s.M, s.N, s.K, dA.ptr, dI.ptr, dC.ptr);
    t.exact(std::string(r.id) + " " + r.name + " TF32: A·I rounds A's ties away from zero", dC.to_host(), want_c, s.N);
  }
}

void run(hg::test::Checker& t) {
  // On a simulated GPU there is no cuBLAS (null handle: rung 00 is left out) and every rung
  // runs on the shapes up to 127x129x65 only: each edge (1x1x1, sizes that divide no tile, one
  // under and one over a 128 tile, one whole tile) is there, and the reference comes from the
  // CPU either way.
  const bool sim = hg::test::simulated();
  cublasHandle_t handle = nullptr;
  if (!sim) HG_CUBLAS_CHECK(cublasCreate(&handle));
  const hg::cuda::DeviceInfo info = hg::cuda::device_info(0);
  const bool sm80 = info.major >= 8, sm89 = info.major * 10 + info.minor >= 89;
  const Shape shapes[] = {{1, 1, 1}, {7, 13, 5}, {33, 17, 129}, {127, 129, 65},
                          {128, 128, 32}, {256, 256, 256}, {300, 200, 100}, {64, 520, 1000}};
  for (Shape s : shapes) {
    if (hg::test::small_run() && s.M * s.N * s.K > 300 * 200 * 100) continue;  // under memcheck
    if (sim && s.M * s.N * s.K > 127 * 129 * 65) continue;
    check_shape(t, handle, s, /*include_slow=*/true, sm80, sm89);
  }
  if (!hg::test::small_run() && !sim) check_shape(t, handle, {640, 384, 512}, /*include_slow=*/false, sm80, sm89);
  if (sm80) check_tf32_rounding(t);
  else t.expect("TF32 rounding on the GPU", true, "skipped: needs sm_80+");
  if (handle != nullptr) HG_CUBLAS_CHECK(cublasDestroy(handle));
}

}  // namespace

HG_GPU_TEST_MAIN(run)
