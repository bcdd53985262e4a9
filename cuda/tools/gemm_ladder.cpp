// gemm_ladder: validate, then time, every rung of the GEMM ladder against cuBLAS, for every
// input format: F32 on the SIMT rungs 01-04, F16, BF16 and TF32 on the tensor-core rungs 05-08,
// and FP8 on rung 09 against cuBLASLt's FP8 GEMM (sm_89+):
//   fp8        E4M3·E4M3, the forward GEMM of FP8 training (cuBLASLt also with fast accumulation)
//   fp8_e5m2   E5M2·E4M3, a backward GEMM of the HYBRID recipe (gradients in E5M2), and
//              E5M2·E5M2, rung 09 only (cuBLASLt has no E5M2·E5M2 GEMM)
// The FP8 GEMMs take B stored (N, K) (cuda/gemm/cublaslt_fp8.h: "TN"), and rung 09 needs M, N,
// K multiples of 16, 8, 32: shapes that are not are skipped for FP8.
//
//   ./build/cuda/gemm_ladder                      the full table (square 256..8192 + transformer shapes)
//   ./build/cuda/gemm_ladder --quick              1000^3 (edges) and 4096^3 only
//   ./build/cuda/gemm_ladder --shape 4096x4096x4096 --format f16,tf32 --all
//   ./build/cuda/gemm_ladder --shape 4096x4096x4096 --format f16,bf16,fp8   the FP8 GOAL lines
//   ./lab bench gemm                              the same, through tests/bench/gemm.sh
//
// For every shape, format and kernel, in this order (no number without a validation before it):
//   1. small-integer inputs: the full C must equal cuBLAS's bit for bit, and sampled entries
//      must equal the exact F64 sum (cuda/gemm/validate.h explains why these are exact);
//   2. random inputs in [-1, 1]: sampled entries within the worst-case summation bound around
//      the exact sum of the operands as the format sees them (F16 or BF16 values, F32 rounded
//      to TF32 with ties away from zero, as the hardware does);
//   3. timing with CUDA events, after warm-up: GFLOP/s = 2 M N K / time, and % of cuBLAS with
//      the same types (SGEMM for rungs 01-04; GemmEx with the same inputs for rungs 05-08;
//      cuBLASLt's FP8 GEMM for rung 09).
// FP8 inputs are FP8 codes of the same small integers and random values times 2^4 (a power of
// two, so the scales 2^-4 undo it exactly); the random bound is validate.h's
// fp8_dot_error_bound (the FP8 accumulator is not documented).
// A kernel that fails validation gets no timing, and the program exits 1. The GOAL lines at
// the end compare the best rung of each format with cuBLAS at 4096^3, rung 09 with the best
// F16 rung (a goal on sm_89 only: elsewhere a NOTE, see the end of main), and cuBLASLt FP8
// with cuBLAS BF16.
// Without a GPU it prints one line and exits 77.
#include "cuda/gemm/cublaslt_fp8.h"
#include "cuda/gemm/fp8_mma.h"
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/validate.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"
#include "framework/dtype/tf32.h"

#include <CLI/CLI.hpp>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace hg::cuda;
using namespace hg::cuda::gemm;

namespace {

struct Shape {
  int M, N, K;
  std::string name;
  double flops() const { return 2.0 * M * N * double(K); }
  bool is_4096() const { return M == 4096 && N == 4096 && K == 4096; }
};

// A device array that frees itself.
template <class T>
struct Device {
  T* p = nullptr;
  size_t n = 0;
  explicit Device(size_t count) : p(static_cast<T*>(device_malloc(count * sizeof(T)))), n(count) {}
  ~Device() { device_free(p); }
  Device(const Device&) = delete;
  void upload(const std::vector<T>& h) { copy_host_to_device(p, h.data(), n * sizeof(T)); }
  std::vector<T> download() const {
    std::vector<T> h(n);
    copy_device_to_host(h.data(), p, n * sizeof(T));
    return h;
  }
};

// ---- the formats -------------------------------------------------------------------------------
// What a format stores and what its tensor cores multiply: `store` turns a float into the
// storage type (RNE for F16/BF16; TF32 is stored as F32), `operand` is the value the multiply
// sees (for TF32: the F32 value rounded to TF32, ties away from zero, as cvt.rna.tf32.f32).
template <class T> struct Format;
template <> struct Format<__half> {
  static constexpr const char* kId = "f16";
  static constexpr const char* kName = "F16";
  static __half store(float x) { return __float2half_rn(x); }
  static float operand(float x) { return __half2float(__float2half_rn(x)); }
  static void cublas(cublasHandle_t h, const Shape& s, const __half* A, const __half* B, float* C) {
    gemm_00_cublas_f16(h, s.M, s.N, s.K, A, B, C);
  }
};
template <> struct Format<__nv_bfloat16> {
  static constexpr const char* kId = "bf16";
  static constexpr const char* kName = "BF16";
  static __nv_bfloat16 store(float x) { return __float2bfloat16_rn(x); }
  static float operand(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }
  static void cublas(cublasHandle_t h, const Shape& s, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C) {
    gemm_00_cublas_bf16(h, s.M, s.N, s.K, A, B, C);
  }
};
template <> struct Format<float> {  // TF32
  static constexpr const char* kId = "tf32";
  static constexpr const char* kName = "TF32";
  static float store(float x) { return x; }
  static float operand(float x) { return hg::round_to_tf32_rna(x); }
  static void cublas(cublasHandle_t h, const Shape& s, const float* A, const float* B, float* C) {
    gemm_00_cublas_tf32(h, s.M, s.N, s.K, A, B, C);
  }
};

// The inputs of one shape for one storage type: the float originals, the operands as the
// format sees them (for the reference), and the stored values on the device.
template <class T, class Op>
struct Inputs {
  std::vector<float> A, B;    // the operands (F32 for the SIMT rungs; format values otherwise)
  std::vector<float> A0, B0;  // the F32 values before rounding (cuBLAS TF32's reference)
  Device<T> dA, dB;
  Inputs(const Shape& s, bool small_integers, Op store, const std::function<float(float)>& operand)
      : A0(size_t(s.M) * s.K), B0(size_t(s.K) * s.N), dA(A0.size()), dB(B0.size()) {
    if (small_integers) { fill_small_integers(A0, 11); fill_small_integers(B0, 12); }
    else                { fill_uniform(A0, 13);        fill_uniform(B0, 14); }
    std::vector<T> a(A0.size()), b(B0.size());
    A.resize(A0.size());
    B.resize(B0.size());
    for (size_t i = 0; i < A0.size(); ++i) { a[i] = store(A0[i]); A[i] = operand(A0[i]); }
    for (size_t i = 0; i < B0.size(); ++i) { b[i] = store(B0[i]); B[i] = operand(B0[i]); }
    dA.upload(a);
    dB.upload(b);
  }
};

// The FP8 inputs of one shape: A (M, K) in TA and B in TB, stored (N, K) for the FP8 GEMMs.
// The values (small integers, or uniform in [-1, 1]) are cast times 2^4 and the GEMMs multiply
// by the scales 2^-4 · 2^-4 afterwards: powers of two, so exact, and the same for both input
// sets (one cuBLASLt plan, whose scale pointers are part of it, serves both). Small integers
// times 16 stay exact in both formats. A and B hold the operands as the GEMM sees them (code
// value times scale), B as (K, N) like every other format's, for the reference; A0 and B0 are
// the same (measure() reads them for cuBLAS TF32 only).
constexpr float kFp8Scale = 1.0f / 16;

template <class T> const char* fp8_name();
template <> const char* fp8_name<__nv_fp8_e4m3>() { return "E4M3"; }
template <> const char* fp8_name<__nv_fp8_e5m2>() { return "E5M2"; }

template <class TA, class TB>
struct Fp8Inputs {
  std::vector<float> A, B;
  const std::vector<float>& A0 = A;
  const std::vector<float>& B0 = B;
  Device<TA> dA;  // (M, K) codes
  Device<TB> dB;  // (N, K) codes
  Fp8Inputs(const Shape& s, bool small_integers)
      : A(size_t(s.M) * s.K), B(size_t(s.K) * s.N), dA(A.size()), dB(B.size()) {
    std::vector<float> a0(A.size()), b0(B.size());  // b0 is (K, N)
    if (small_integers) { fill_small_integers(a0, 11); fill_small_integers(b0, 12); }
    else                { fill_uniform(a0, 13);        fill_uniform(b0, 14); }
    std::vector<TA> a(A.size());
    std::vector<TB> b(B.size());
    for (size_t i = 0; i < A.size(); ++i) {
      a[i] = TA(a0[i] / kFp8Scale);  // round to nearest even, saturating (cuda_fp8.h)
      A[i] = float(a[i]) * kFp8Scale;
    }
    for (int k = 0; k < s.K; ++k)
      for (int n = 0; n < s.N; ++n) {
        const TB code(b0[size_t(k) * s.N + n] / kFp8Scale);
        b[size_t(n) * s.K + k] = code;  // stored (N, K)
        B[size_t(k) * s.N + n] = float(code) * kFp8Scale;
      }
    dA.upload(a);
    dB.upload(b);
  }
};

// Entries checked against the F64 reference: the four corners and 250 pseudo-random ones.
std::vector<std::pair<int, int>> sample_entries(const Shape& s) {
  std::vector<std::pair<int, int>> e = {{0, 0}, {0, s.N - 1}, {s.M - 1, 0}, {s.M - 1, s.N - 1}};
  SplitMix64 g(99);
  for (int i = 0; i < 250; ++i) e.push_back({int(g.next() % s.M), int(g.next() % s.N)});
  return e;
}

// How far a result may be from the exact F64 sum of its reference operands.
enum class Bound { Exact, F32Sum, TensorCoreSum, TensorCoreSumTf32Inputs, Fp8Sum };

// Returns "" when the sampled entries pass, else a description of the first failure.
std::string check_samples(const std::vector<float>& C, const std::vector<float>& A, const std::vector<float>& B,
                          const Shape& s, Bound bound) {
  for (auto [m, n] : sample_entries(s)) {
    const EntryRef r = reference_entry(A.data(), B.data(), s.N, s.K, m, n);
    const double got = C[size_t(m) * s.N + n];
    double allowed = std::fabs(r.value) * 0x1p-24;  // the final rounding to F32
    switch (bound) {
      case Bound::Exact: allowed = 0; break;
      case Bound::F32Sum: allowed += f32_dot_error_bound(s.K, r.abs_sum); break;
      case Bound::TensorCoreSum: allowed += tensor_core_dot_error_bound(s.K, r.abs_sum); break;
      case Bound::TensorCoreSumTf32Inputs:
        allowed += tensor_core_dot_error_bound(s.K, r.abs_sum) + tf32_operand_rounding_bound(r.abs_sum);
        break;
      case Bound::Fp8Sum: allowed += fp8_dot_error_bound(s.K, r.abs_sum); break;
    }
    if (!(std::fabs(got - r.value) <= allowed)) {
      char buf[240];
      std::snprintf(buf, sizeof buf, "C[%d][%d] = %.9g, reference %.9g, allowed error %.3g", m, n, got, r.value, allowed);
      return buf;
    }
  }
  return "";
}

std::string check_equal(const std::vector<float>& got, const std::vector<float>& want, size_t N) {
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i])) {
      char buf[240];
      std::snprintf(buf, sizeof buf, "C[%zu][%zu] = %.9g, cuBLAS(Lt) %.9g (should be bit-identical)", i / N, i % N,
                    got[i], want[i]);
      return buf;
    }
  return "";
}

// Mean time of one call in ms, measured with CUDA events after warm-up. Runs enough
// repetitions for about `target_ms` of work (at least 3 unless a single call is over 1 s).
double time_ms(const std::function<void()>& run, double target_ms) {
  cudaEvent_t start, stop;
  HG_CUDA_CHECK(cudaEventCreate(&start));
  HG_CUDA_CHECK(cudaEventCreate(&stop));
  run();  // warm-up (the validation runs before this also warmed caches and clocks)
  HG_CUDA_CHECK(cudaEventRecord(start));
  run();
  HG_CUDA_CHECK(cudaEventRecord(stop));
  HG_CUDA_CHECK(cudaEventSynchronize(stop));
  float one = 0;
  HG_CUDA_CHECK(cudaEventElapsedTime(&one, start, stop));
  const int reps = one > 1000.0f ? 1 : std::clamp(int(target_ms / std::max(one, 1e-3f)), 3, 200);
  HG_CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < reps; ++i) run();
  HG_CUDA_CHECK(cudaEventRecord(stop));
  HG_CUDA_CHECK(cudaEventSynchronize(stop));
  float total = 0;
  HG_CUDA_CHECK(cudaEventElapsedTime(&total, start, stop));
  HG_CUDA_CHECK(cudaEventDestroy(start));
  HG_CUDA_CHECK(cudaEventDestroy(stop));
  return total / reps;
}

bool parse_shape(const std::string& text, Shape& s) {
  int m = 0, n = 0, k = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%dx%dx%d%c", &m, &n, &k, &tail) != 3 || m < 1 || n < 1 || k < 1) return false;
  s = {m, n, k, text};
  return true;
}

struct Result { double ms = 0; bool valid = false; };

// The table: validation, timing and printing of one kernel; the best rung per format at 4096^3.
struct Table {
  cublasHandle_t handle;
  cublasLtHandle_t lt;          // cuBLASLt, for FP8
  void* lt_workspace = nullptr;  // kCublasLtWorkspaceBytes on the device
  double target_ms;
  bool all;
  int failures = 0;
  struct Best { std::string rung; double ms = 0, cublas_ms = 0; };
  std::map<std::string, Best> best_4096;  // format -> best rung
  std::map<std::string, Best> library_4096;  // format -> cuBLAS(Lt) with that format's inputs

  // Validates `run` (which writes C from the inputs it is given) and then times it.
  template <class In>
  Result measure(const Shape& s, const std::string& name, Device<float>& C, const In& ints, const In& rnd,
                 const std::vector<float>* cublas_ints, Bound random_bound, const std::function<void(const In&)>& run) {
    Result r;
    HG_CUDA_CHECK(cudaMemset(C.p, 0xFF, C.n * sizeof(float)));  // NaN everywhere: a missed entry shows
    run(ints);
    synchronize();
    const std::vector<float> got = C.download();
    std::string err = check_samples(got, ints.A, ints.B, s, Bound::Exact);
    if (err.empty() && cublas_ints) err = check_equal(got, *cublas_ints, s.N);
    if (err.empty()) {
      run(rnd);
      synchronize();
      const bool raw = random_bound == Bound::TensorCoreSumTf32Inputs;  // cuBLAS TF32: unrounded reference
      err = check_samples(C.download(), raw ? rnd.A0 : rnd.A, raw ? rnd.B0 : rnd.B, s, random_bound);
    }
    if (!err.empty()) {
      std::printf("%-24s %-40s %-10s %s\n", s.name.c_str(), name.c_str(), "FAILED", err.c_str());
      ++failures;
      return r;
    }
    r.valid = true;
    r.ms = time_ms([&] { run(rnd); }, target_ms);
    return r;
  }

  void print(const Shape& s, const std::string& name, const Result& r, double base_ms) {
    if (!r.valid) return;
    std::printf("%-24s %-40s %-10s %10.3f %10.0f", s.name.c_str(), name.c_str(), "ok", r.ms, s.flops() / (r.ms * 1e6));
    if (base_ms > 0) std::printf(" %8.1f%%\n", 100.0 * base_ms / r.ms);
    else std::printf(" %9s\n", "-");  // no library GEMM with these types
  }

  void remember(const Shape& s, const std::string& format, const std::string& rung, const Result& r, double cublas_ms,
                std::map<std::string, Best>& best) {
    if (!r.valid || !s.is_4096()) return;
    Best& b = best[format];
    if (b.ms == 0 || r.ms < b.ms) b = {rung, r.ms, cublas_ms};
  }
  void remember(const Shape& s, const std::string& format, const std::string& rung, const Result& r, double cublas_ms) {
    remember(s, format, rung, r, cublas_ms, best_4096);
  }

  // F32 on the SIMT rungs 01-04, against cublasSgemm.
  void f32(const Shape& s) {
    auto same = [](float x) { return x; };
    using In = Inputs<float, decltype(same)>;
    In ints(s, true, same, same), rnd(s, false, same, same);
    Device<float> C(size_t(s.M) * s.N);
    const Result sgemm = measure<In>(s, "00 cublasSgemm (F32)", C, ints, rnd, nullptr, Bound::F32Sum,
                                     [&](const In& in) { gemm_00_cublas_f32(handle, s.M, s.N, s.K, in.dA.p, in.dB.p, C.p); });
    gemm_00_cublas_f32(handle, s.M, s.N, s.K, ints.dA.p, ints.dB.p, C.p);
    const std::vector<float> sgemm_ints = C.download();
    print(s, "00 cublasSgemm (F32)", sgemm, sgemm.ms);
    const bool slow_ok = all || s.flops() <= 2.0 * 4096.0 * 4096.0 * 4096.0;
    for (const RungF32& rung : kRungsF32) {
      const std::string name = std::string(rung.id) + " " + rung.name + " (F32)";
      if (!slow_ok && (rung.run == gemm_01_naive || rung.run == gemm_02_coalesced)) {
        std::printf("%-24s %-40s %-10s (slow rung, skipped at this size; --all runs it)\n", s.name.c_str(), name.c_str(), "-");
        continue;
      }
      const Result r = measure<In>(s, name, C, ints, rnd, &sgemm_ints, Bound::F32Sum,
                                   [&](const In& in) { rung.run(s.M, s.N, s.K, in.dA.p, in.dB.p, C.p); });
      print(s, name, r, sgemm.ms);
      remember(s, "F32 (SIMT)", name, r, sgemm.ms);
    }
  }

  // One tensor-core format on rungs 05-08, against cublasGemmEx with the same inputs.
  template <class T>
  void tensor_cores(const Shape& s) {
    using F = Format<T>;
    using In = Inputs<T, decltype(&F::store)>;
    In ints(s, true, &F::store, &F::operand), rnd(s, false, &F::store, &F::operand);
    Device<float> C(size_t(s.M) * s.N);
    const std::string cublas_name = std::string("00 cublasGemmEx (") + F::kName + "->F32)";
    // cuBLAS's TF32 rounding of its inputs is its own: checked against the unrounded values.
    const Bound cublas_bound = std::is_same_v<T, float> ? Bound::TensorCoreSumTf32Inputs : Bound::TensorCoreSum;
    const Result gemmex = measure<In>(s, cublas_name, C, ints, rnd, nullptr, cublas_bound,
                                      [&](const In& in) { F::cublas(handle, s, in.dA.p, in.dB.p, C.p); });
    F::cublas(handle, s, ints.dA.p, ints.dB.p, C.p);
    const std::vector<float> gemmex_ints = C.download();
    print(s, cublas_name, gemmex, gemmex.ms);
    remember(s, F::kName, cublas_name, gemmex, gemmex.ms, library_4096);
    for (const RungTC<T>& rung : kRungsTC<T>) {
      const std::string name = std::string(rung.id) + " " + rung.name + " (" + F::kName + ")";
      const Result r = measure<In>(s, name, C, ints, rnd, &gemmex_ints, Bound::TensorCoreSum,
                                   [&](const In& in) { rung.run(s.M, s.N, s.K, in.dA.p, in.dB.p, C.p); });
      print(s, name, r, gemmex.ms);
      remember(s, F::kName, name, r, gemmex.ms);
    }
  }

  // Rung 09 with A in TA and B in TB, against cuBLASLt's FP8 GEMM with the same types (and,
  // for E4M3·E4M3, with fast accumulation too). cuBLASLt has no E5M2·E5M2: that pair is
  // validated against the F64 reference of the emulated operands alone, and has no % column.
  template <class TA, class TB>
  void fp8(const Shape& s) {
    using In = Fp8Inputs<TA, TB>;
    In ints(s, true), rnd(s, false);
    Device<float> C(size_t(s.M) * s.N);
    const std::string pair = std::string(fp8_name<TA>()) + "·" + fp8_name<TB>();
    const std::string format = "FP8 " + pair;
    const bool has_lt = !(std::is_same_v<TA, __nv_fp8_e5m2> && std::is_same_v<TB, __nv_fp8_e5m2>);
    Device<float> scales(2);  // {scale_a, scale_b} on the device, where cuBLASLt reads them
    scales.upload({kFp8Scale, kFp8Scale});
    Result lt_best;
    std::vector<float> lt_ints;
    for (bool fast : {false, true}) {
      if (!has_lt || (fast && !std::is_same_v<TA, __nv_fp8_e4m3>)) continue;  // fast accumulation: the forward GEMM
      const std::string name = std::string("00 cublasLt FP8 ") + (fast ? "fast-accum " : "") + "(" + pair + ")";
      std::unique_ptr<CublasLtFp8Gemm> plan;
      try {
        plan = std::make_unique<CublasLtFp8Gemm>(lt, s.M, s.N, s.K, fp8_data_type<TA>(), fp8_data_type<TB>(), scales.p,
                                                 scales.p + 1, lt_workspace, kCublasLtWorkspaceBytes, fast);
      } catch (const std::exception& e) {  // no algorithm for this GPU, shape or types: say so, go on
        std::printf("%-24s %-40s %-10s %s\n", s.name.c_str(), name.c_str(), "FAILED", e.what());
        ++failures;
        continue;
      }
      const Result r = measure<In>(s, name, C, ints, rnd, nullptr, Bound::Fp8Sum,
                                   [&](const In& in) { plan->run(in.dA.p, in.dB.p, C.p); });
      if (!fast && r.valid) {
        plan->run(ints.dA.p, ints.dB.p, C.p);
        lt_ints = C.download();
      }
      print(s, name, r, r.ms);
      remember(s, format, name, r, r.ms, library_4096);
      if (r.valid && (!lt_best.valid || r.ms < lt_best.ms)) lt_best = r;
    }
    const std::string name = "09 mma_fp8 (" + pair + ")";
    const float scale = kFp8Scale * kFp8Scale;  // scale_a · scale_b, rung 09's epilogue
    const Result r = measure<In>(s, name, C, ints, rnd, lt_ints.empty() ? nullptr : &lt_ints, Bound::Fp8Sum,
                                 [&](const In& in) { gemm_09_mma_fp8(s.M, s.N, s.K, in.dA.p, in.dB.p, C.p, scale); });
    print(s, name, r, lt_best.valid ? lt_best.ms : 0.0);
    remember(s, format, name, r, lt_best.valid ? lt_best.ms : 0.0);
  }
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gemm_ladder: validate, then time, every rung of the GEMM ladder against cuBLAS"};
  bool quick = false, all = false;
  std::vector<std::string> shape_args;
  std::string formats_arg = "f32,f16,bf16,tf32,fp8,fp8_e5m2";
  double target_ms = 200;
  app.add_flag("--quick", quick, "two shapes only: 1000^3 (edges, padding) and 4096^3 (the GOAL lines)");
  app.add_flag("--all", all, "also time rungs 01-02 above 2*4096^3 flops (slow)");
  app.add_option("--shape", shape_args, "MxNxK (repeatable); replaces the default list");
  app.add_option("--format", formats_arg,
                 "comma-separated: f32 (SIMT rungs), f16, bf16, tf32 (tensor-core rungs), fp8 (E4M3), fp8_e5m2 (rung 09)");
  app.add_option("--target-ms", target_ms, "time to spend per measurement")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);    // prints --help, or the error
    return rc == 0 ? 0 : 2;        // command-line errors exit 2
  }

  const std::vector<std::string> formats = split_list(formats_arg);
  for (const std::string& f : formats)
    if (f != "f32" && f != "f16" && f != "bf16" && f != "tf32" && f != "fp8" && f != "fp8_e5m2") {
      std::fprintf(stderr, "gemm_ladder: --format '%s' is not one of f32, f16, bf16, tf32, fp8, fp8_e5m2\n", f.c_str());
      return 2;
    }
  auto wants = [&](const char* f) { return std::find(formats.begin(), formats.end(), f) != formats.end(); };

  std::vector<Shape> shapes;
  for (const std::string& text : shape_args) {
    Shape s;
    if (!parse_shape(text, s)) {
      std::fprintf(stderr, "gemm_ladder: --shape '%s' is not MxNxK with positive integers (e.g. 4096x4096x4096)\n", text.c_str());
      return 2;
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) {
    // Not a multiple of any tile: the edge guards (01-04) and the zero padding (05-08).
    shapes.push_back({1000, 1000, 1000, "1000^3 (edges)"});
    for (int n : {256, 512, 1024, 2048, 4096, 8192})
      if (!quick || n == 4096) shapes.push_back({n, n, n, std::to_string(n) + "^3"});
    if (!quick) {  // BERT-base layers on 16 sequences of 512 tokens (8192 rows)
      shapes.push_back({8192, 2304, 768, "qkv 8192x2304x768"});
      shapes.push_back({8192, 3072, 768, "ffn-up 8192x3072x768"});
      shapes.push_back({8192, 768, 3072, "ffn-down 8192x768x3072"});
    }
  }

  if (!available()) {
    std::printf("gemm_ladder: %s; the GEMM table needs a GPU (run tests/gpu/run.sh on a machine with one)\n",
                no_gpu_reason().c_str());
    return 77;
  }
  const DeviceInfo info = device_info(0);
  const bool sm80 = info.major >= 8, sm89 = info.major * 10 + info.minor >= 89;
  std::printf("GPU: %s\n", describe(info).c_str());
  std::printf("C = A·B, row-major, F32 accumulation and output; rungs 01-04 F32 (SIMT); rungs 05-08 tensor cores "
              "with F16, BF16 or TF32 inputs; rung 09 tensor cores with FP8 inputs, B stored (N, K), vs cuBLASLt\n\n");
  std::printf("%-24s %-40s %-10s %10s %10s %9s\n", "shape", "kernel", "validated", "ms", "GFLOP/s", "% cuBLAS");

  Table table;
  HG_CUBLAS_CHECK(cublasCreate(&table.handle));  // created here, where the reader sees it, and destroyed at the end
  HG_CUBLAS_CHECK(cublasLtCreate(&table.lt));
  table.lt_workspace = device_malloc(kCublasLtWorkspaceBytes);
  table.target_ms = target_ms;
  table.all = all;
  for (const Shape& s : shapes) {
    if (wants("f32")) table.f32(s);
    if (wants("f16")) table.tensor_cores<__half>(s);
    for (const char* f : {"bf16", "tf32"})
      if (wants(f) && !sm80)
        std::printf("%-24s %-40s %-10s (needs sm_80+; this GPU is sm_%d%d)\n", s.name.c_str(), f, "-", info.major, info.minor);
    if (wants("bf16") && sm80) table.tensor_cores<__nv_bfloat16>(s);
    if (wants("tf32") && sm80) table.tensor_cores<float>(s);
    for (const char* f : {"fp8", "fp8_e5m2"}) {
      if (!wants(f)) continue;
      if (!sm89)
        std::printf("%-24s %-40s %-10s (needs sm_89+; this GPU is sm_%d%d)\n", s.name.c_str(), f, "-", info.major, info.minor);
      else if (s.M % 16 || s.N % 8 || s.K % 32)
        std::printf("%-24s %-40s %-10s (rung 09 needs M, N, K multiples of 16, 8, 32)\n", s.name.c_str(), f, "-");
      else if (f == std::string("fp8"))
        table.fp8<__nv_fp8_e4m3, __nv_fp8_e4m3>(s);
      else {
        table.fp8<__nv_fp8_e5m2, __nv_fp8_e4m3>(s);
        table.fp8<__nv_fp8_e5m2, __nv_fp8_e5m2>(s);
      }
    }
    std::printf("\n");
  }
  device_free(table.lt_workspace);
  HG_CUBLAS_CHECK(cublasLtDestroy(table.lt));
  HG_CUBLAS_CHECK(cublasDestroy(table.handle));

  // The goals of the project's plan for an H200 (one run, ratios at 4096^3).
  const std::pair<const char*, double> goals[] = {{"F32 (SIMT)", 70}, {"F16", 60}, {"BF16", 60}, {"TF32", 50}};
  for (const auto& [format, goal] : goals) {
    auto it = table.best_4096.find(format);
    if (it == table.best_4096.end()) continue;
    const double pct = 100.0 * it->second.cublas_ms / it->second.ms;
    std::printf("GOAL 4096^3 %-10s best rung %-40s %5.1f%% of cuBLAS (goal >= %.0f%%): %s\n", format,
                it->second.rung.c_str(), pct, goal, pct >= goal ? "met" : "NOT MET");
  }
  // The FP8 goals are ratios of throughputs (time of the other / time of the FP8 GEMM), from
  // this run only: the other side must have run at 4096^3 too. A ratio with no goal (goal 0) is
  // printed as a NOTE, with `why` in place of the verdict.
  auto ratio_goal = [&](const char* what, const std::map<std::string, Table::Best>& fp8_side, const char* fp8_format,
                        const std::map<std::string, Table::Best>& other_side, const char* other_format, double goal,
                        const char* goal_text, const char* formats_needed) {
    const char* kind = goal > 0 ? "GOAL" : "NOTE";
    const auto f = fp8_side.find(fp8_format), o = other_side.find(other_format);
    if (f == fp8_side.end() || o == other_side.end()) {
      std::printf("%s 4096^3 %s: not measured in this run (needs 4096^3 with --format %s on sm_89+)\n", kind, what,
                  formats_needed);
      return;
    }
    const double r = o->second.ms / f->second.ms;
    if (goal > 0)
      std::printf("GOAL 4096^3 %s: %s / %s = %.2fx (goal %s): %s\n", what, f->second.rung.c_str(),
                  o->second.rung.c_str(), r, goal_text, r >= goal ? "met" : "NOT MET");
    else
      std::printf("NOTE 4096^3 %s: %s / %s = %.2fx (%s)\n", what, f->second.rung.c_str(), o->second.rung.c_str(), r,
                  goal_text);
  };
  if (wants("fp8")) {
    // Rung 09's mma.sync becomes FP8 tensor-core instructions only in the code built for sm_89;
    // for sm_90 nvcc unpacks the FP8 operands to F16 and issues F16 MMAs (tests/gpu/kernel_facts.sh
    // counts both), so on Hopper the rung cannot beat the F16 rungs: no goal there, the ratio
    // is shown. Hopper's FP8 tensor cores are wgmma's (sm_90a): cuBLASLt's line below.
    if (info.major == 8 && info.minor == 9)
      ratio_goal("FP8 rung vs best F16 rung", table.best_4096, "FP8 E4M3·E4M3", table.best_4096, "F16", 1.5,
                 ">= 1.5x", "fp8,f16");
    else
      ratio_goal("FP8 rung vs best F16 rung", table.best_4096, "FP8 E4M3·E4M3", table.best_4096, "F16", 0,
                 info.major == 9 ? "no goal on sm_90: rung 09 runs on the F16 tensor cores here, after unpacking FP8"
                                 : "no goal: only sm_89's code is known to use FP8 tensor cores for rung 09",
                 "fp8,f16");
    ratio_goal("cuBLASLt FP8 vs cuBLAS BF16", table.library_4096, "FP8 E4M3·E4M3", table.library_4096, "BF16", 1.8,
               "about 2x: >= 1.8x", "fp8,bf16");
  }
  std::printf("%s\n", table.failures == 0 ? "all kernels validated before timing"
                                          : "SOME KERNELS FAILED VALIDATION (no timing shown for them)");
  return table.failures == 0 ? 0 : 1;
}
