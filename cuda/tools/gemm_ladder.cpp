// gemm_ladder: validate, then time, every rung of the GEMM ladder against cuBLAS, for every
// input format: F32 on the SIMT rungs 01-04, and F16, BF16 and TF32 on the tensor-core rungs
// 05-08.
//
//   ./build/cuda/gemm_ladder                      the full table (square 256..8192 + transformer shapes)
//   ./build/cuda/gemm_ladder --quick              1000^3 (edges) and 4096^3 only
//   ./build/cuda/gemm_ladder --shape 4096x4096x4096 --format f16,tf32 --all
//   ./lab bench gemm                              the same, through tests/bench/gemm.sh
//
// For every shape, format and kernel, in this order (no number without a validation before it):
//   1. small-integer inputs: the full C must equal cuBLAS's bit for bit, and sampled entries
//      must equal the exact F64 sum (cuda/gemm/validate.h explains why these are exact);
//   2. random inputs in [-1, 1]: sampled entries within the worst-case summation bound around
//      the exact sum of the operands as the format sees them (F16 or BF16 values, F32 rounded
//      to TF32 with ties away from zero, as the hardware does);
//   3. timing with CUDA events, after warm-up: GFLOP/s = 2 M N K / time, and % of cuBLAS with
//      the same types (SGEMM for rungs 01-04; GemmEx with the same inputs for rungs 05-08).
// A kernel that fails validation gets no timing, and the program exits 1. The GOAL lines at
// the end compare the best rung of each format with cuBLAS at 4096^3.
// Without a GPU it prints one line and exits 77.
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/validate.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"
#include "framework/dtype/tf32.h"

#include <CLI/CLI.hpp>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
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

// Entries checked against the F64 reference: the four corners and 250 pseudo-random ones.
std::vector<std::pair<int, int>> sample_entries(const Shape& s) {
  std::vector<std::pair<int, int>> e = {{0, 0}, {0, s.N - 1}, {s.M - 1, 0}, {s.M - 1, s.N - 1}};
  SplitMix64 g(99);
  for (int i = 0; i < 250; ++i) e.push_back({int(g.next() % s.M), int(g.next() % s.N)});
  return e;
}

// How far a result may be from the exact F64 sum of its reference operands.
enum class Bound { Exact, F32Sum, TensorCoreSum, TensorCoreSumTf32Inputs };

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
      std::snprintf(buf, sizeof buf, "C[%zu][%zu] = %.9g, cuBLAS %.9g (should be bit-identical)", i / N, i % N,
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
  double target_ms;
  bool all;
  int failures = 0;
  struct Best { std::string rung; double ms = 0, cublas_ms = 0; };
  std::map<std::string, Best> best_4096;  // format -> best rung

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
    std::printf("%-24s %-40s %-10s %10.3f %10.0f %8.1f%%\n", s.name.c_str(), name.c_str(), "ok", r.ms,
                s.flops() / (r.ms * 1e6), base_ms > 0 ? 100.0 * base_ms / r.ms : 0.0);
  }

  void remember(const Shape& s, const std::string& format, const std::string& rung, const Result& r, double cublas_ms) {
    if (!r.valid || !s.is_4096()) return;
    Best& b = best_4096[format];
    if (b.ms == 0 || r.ms < b.ms) b = {rung, r.ms, cublas_ms};
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
    for (const RungTC<T>& rung : kRungsTC<T>) {
      const std::string name = std::string(rung.id) + " " + rung.name + " (" + F::kName + ")";
      const Result r = measure<In>(s, name, C, ints, rnd, &gemmex_ints, Bound::TensorCoreSum,
                                   [&](const In& in) { rung.run(s.M, s.N, s.K, in.dA.p, in.dB.p, C.p); });
      print(s, name, r, gemmex.ms);
      remember(s, F::kName, name, r, gemmex.ms);
    }
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
  std::string formats_arg = "f32,f16,bf16,tf32";
  double target_ms = 200;
  app.add_flag("--quick", quick, "two shapes only: 1000^3 (edges, padding) and 4096^3 (the GOAL lines)");
  app.add_flag("--all", all, "also time rungs 01-02 above 2*4096^3 flops (slow)");
  app.add_option("--shape", shape_args, "MxNxK (repeatable); replaces the default list");
  app.add_option("--format", formats_arg, "comma-separated: f32 (SIMT rungs), f16, bf16, tf32 (tensor-core rungs)");
  app.add_option("--target-ms", target_ms, "time to spend per measurement")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);    // prints --help, or the error
    return rc == 0 ? 0 : 2;        // command-line errors exit 2
  }

  const std::vector<std::string> formats = split_list(formats_arg);
  for (const std::string& f : formats)
    if (f != "f32" && f != "f16" && f != "bf16" && f != "tf32") {
      std::fprintf(stderr, "gemm_ladder: --format '%s' is not one of f32, f16, bf16, tf32\n", f.c_str());
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
  const bool sm80 = info.major >= 8;
  std::printf("GPU: %s\n", describe(info).c_str());
  std::printf("C = A·B, row-major, F32 accumulation and output; rungs 01-04 F32 (SIMT); rungs 05-08 tensor cores "
              "with F16, BF16 or TF32 inputs\n\n");
  std::printf("%-24s %-40s %-10s %10s %10s %9s\n", "shape", "kernel", "validated", "ms", "GFLOP/s", "% cuBLAS");

  Table table;
  HG_CUBLAS_CHECK(cublasCreate(&table.handle));  // created here, where the reader sees it, and destroyed at the end
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
    std::printf("\n");
  }
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
  std::printf("%s\n", table.failures == 0 ? "all kernels validated before timing"
                                          : "SOME KERNELS FAILED VALIDATION (no timing shown for them)");
  return table.failures == 0 ? 0 : 1;
}
