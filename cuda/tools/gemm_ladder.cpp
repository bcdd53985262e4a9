// gemm_ladder: validate, then time, every rung of the GEMM ladder against cuBLAS.
//
//   ./build/cuda/gemm_ladder                      the full table (square 256..8192 + transformer shapes)
//   ./build/cuda/gemm_ladder --quick              square 256..2048 only
//   ./build/cuda/gemm_ladder --shape 4096x4096x4096 --all
//   ./lab bench gemm                              the same, through tests/bench/gemm.sh
//
// For every shape and kernel, in this order (no number without a validation before it):
//   1. small-integer inputs: the full C must equal cuBLAS's bit for bit, and sampled entries
//      must equal the exact F64 sum (cuda/gemm/validate.h explains why these are exact);
//   2. random inputs in [-1, 1]: sampled entries within the worst-case F32 summation bound;
//   3. timing with CUDA events, after warm-up: GFLOP/s = 2 M N K / time, and % of cuBLAS
//      with the same types (SGEMM for rungs 01-04; GemmEx F16 -> F32 for rungs 05-07).
// A kernel that fails validation gets no timing, and the program exits 1.
// Without a GPU it prints one line and exits 77.
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/validate.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"

#include <CLI/CLI.hpp>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace hg::cuda;
using namespace hg::cuda::gemm;

namespace {

struct Shape {
  int M, N, K;
  std::string name;
  double flops() const { return 2.0 * M * N * double(K); }
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

std::vector<__half> to_half(const std::vector<float>& x) {
  std::vector<__half> h(x.size());
  for (size_t i = 0; i < x.size(); ++i) h[i] = __float2half_rn(x[i]);
  return h;
}
std::vector<float> from_half(const std::vector<__half>& h) {
  std::vector<float> x(h.size());
  for (size_t i = 0; i < h.size(); ++i) x[i] = __half2float(h[i]);
  return x;
}

// The inputs of one shape, on the host (for the reference) and on the device, in F32 and F16.
struct Inputs {
  std::vector<float> A, B, A16, B16;   // host; A16/B16 are the F16-rounded values as floats
  Device<float> dA, dB;
  Device<__half> hA, hB;
  Inputs(const Shape& s, bool small_integers)
      : A(size_t(s.M) * s.K), B(size_t(s.K) * s.N), dA(A.size()), dB(B.size()), hA(A.size()), hB(B.size()) {
    if (small_integers) { fill_small_integers(A, 11); fill_small_integers(B, 12); }
    else                { fill_uniform(A, 13);        fill_uniform(B, 14); }
    dA.upload(A);
    dB.upload(B);
    std::vector<__half> a = to_half(A), b = to_half(B);
    hA.upload(a);
    hB.upload(b);
    A16 = from_half(a);
    B16 = from_half(b);
  }
};

// Entries checked against the F64 reference: the four corners, the last row and column's
// ends, and 250 pseudo-random ones.
std::vector<std::pair<int, int>> sample_entries(const Shape& s) {
  std::vector<std::pair<int, int>> e = {{0, 0}, {0, s.N - 1}, {s.M - 1, 0}, {s.M - 1, s.N - 1}};
  SplitMix64 g(99);
  for (int i = 0; i < 250; ++i) e.push_back({int(g.next() % s.M), int(g.next() % s.N)});
  return e;
}

// Sampled check against F64: exact for small integers, within the F32 bound for random inputs.
// Returns "" when it passes, else a description of the first failure.
std::string check_samples(const std::vector<float>& C, const std::vector<float>& A, const std::vector<float>& B,
                          const Shape& s, bool exact) {
  for (auto [m, n] : sample_entries(s)) {
    const EntryRef r = reference_entry(A.data(), B.data(), s.N, s.K, m, n);
    const double got = C[size_t(m) * s.N + n];
    const double allowed = exact ? 0.0 : f32_dot_error_bound(s.K, r.abs_sum) + std::fabs(r.value) * 0x1p-24;
    if (!(std::fabs(got - r.value) <= allowed)) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "C[%d][%d] = %.9g, reference %.9g, allowed error %.3g", m, n, got, r.value, allowed);
      return buf;
    }
  }
  return "";
}

std::string check_equal(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i])) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "entry %zu = %.9g, cuBLAS %.9g (should be bit-identical)", i, got[i], want[i]);
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gemm_ladder: validate, then time, every rung of the GEMM ladder against cuBLAS"};
  bool quick = false, all = false;
  std::vector<std::string> shape_args;
  double target_ms = 200;
  app.add_flag("--quick", quick, "square sizes 256..2048 only");
  app.add_flag("--all", all, "also time rungs 01-02 above 2*4096^3 flops (slow)");
  app.add_option("--shape", shape_args, "MxNxK (repeatable); replaces the default list");
  app.add_option("--target-ms", target_ms, "time to spend per measurement")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);    // prints --help, or the error
    return rc == 0 ? 0 : 2;        // command-line errors exit 2
  }

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
    for (int n : {256, 512, 1024, 2048, 4096, 8192})
      if (!quick || n <= 2048) shapes.push_back({n, n, n, std::to_string(n) + "^3"});
    // Not a multiple of any tile: the edge guards (01-04) and the zero padding (05-07).
    shapes.push_back({1000, 1000, 1000, "1000^3 (edges)"});
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
  std::printf("GPU: %s\n", describe(info).c_str());
  std::printf("C = A·B, row-major; rungs 01-04 F32; rungs 05-07 F16 inputs, F32 accumulate and output\n\n");
  std::printf("%-24s %-34s %-10s %10s %10s %9s\n", "shape", "kernel", "validated", "ms", "GFLOP/s", "% cuBLAS");

  cublasHandle_t handle;  // created here, where the reader sees it, and destroyed at the end
  HG_CUBLAS_CHECK(cublasCreate(&handle));
  int failures = 0;
  double simt_best_4096 = 0, wmma_best_4096 = 0, sgemm_4096 = 0, gemmex_4096 = 0;
  std::string simt_best_name, wmma_best_name;

  for (const Shape& s : shapes) {
    Inputs ints(s, true), rnd(s, false);
    Device<float> C(size_t(s.M) * s.N);
    const bool slow_ok = all || s.flops() <= 2.0 * 4096.0 * 4096.0 * 4096.0;

    // Validates `run` (which writes C from the given inputs) and then times it.
    auto measure = [&](const std::string& name, bool f16, const std::vector<float>* cublas_ints,
                       const std::function<void(const Inputs&)>& run) -> Result {
      Result r;
      HG_CUDA_CHECK(cudaMemset(C.p, 0xFF, C.n * sizeof(float)));  // NaN everywhere: a missed entry shows
      run(ints);
      synchronize();
      std::vector<float> got = C.download();
      std::string err = check_samples(got, f16 ? ints.A16 : ints.A, f16 ? ints.B16 : ints.B, s, true);
      if (err.empty() && cublas_ints) err = check_equal(got, *cublas_ints);
      if (err.empty()) {
        run(rnd);
        synchronize();
        err = check_samples(C.download(), f16 ? rnd.A16 : rnd.A, f16 ? rnd.B16 : rnd.B, s, false);
      }
      if (!err.empty()) {
        std::printf("%-24s %-34s %-10s %s\n", s.name.c_str(), name.c_str(), "FAILED", err.c_str());
        ++failures;
        return r;
      }
      r.valid = true;
      r.ms = time_ms([&] { run(rnd); }, target_ms);
      return r;
    };
    auto print = [&](const std::string& name, const Result& r, double base_ms) {
      if (!r.valid) return;
      std::printf("%-24s %-34s %-10s %10.3f %10.0f %8.1f%%\n", s.name.c_str(), name.c_str(), "ok", r.ms,
                  s.flops() / (r.ms * 1e6), base_ms > 0 ? 100.0 * base_ms / r.ms : 0.0);
    };

    // cuBLAS first: it is the yardstick, and its small-integer result is the full-matrix reference.
    const Result sgemm = measure("00 cublasSgemm (F32)", false, nullptr, [&](const Inputs& in) {
      gemm_00_cublas_f32(handle, s.M, s.N, s.K, in.dA.p, in.dB.p, C.p);
    });
    gemm_00_cublas_f32(handle, s.M, s.N, s.K, ints.dA.p, ints.dB.p, C.p);
    const std::vector<float> sgemm_ints = C.download();
    print("00 cublasSgemm (F32)", sgemm, sgemm.ms);

    for (const RungF32& rung : kRungsF32) {
      const std::string name = std::string(rung.id) + " " + rung.name;
      if (!slow_ok && (rung.run == gemm_01_naive || rung.run == gemm_02_coalesced)) {
        std::printf("%-24s %-34s %-10s (slow rung, skipped at this size; --all runs it)\n", s.name.c_str(), name.c_str(), "-");
        continue;
      }
      const Result r = measure(name, false, &sgemm_ints, [&](const Inputs& in) { rung.run(s.M, s.N, s.K, in.dA.p, in.dB.p, C.p); });
      print(name, r, sgemm.ms);
      if (r.valid && s.M == 4096 && s.N == 4096 && s.K == 4096 && (simt_best_4096 == 0 || r.ms < simt_best_4096)) {
        simt_best_4096 = r.ms;
        simt_best_name = name;
      }
    }

    const Result gemmex = measure("00 cublasGemmEx (F16->F32)", true, nullptr, [&](const Inputs& in) {
      gemm_00_cublas_f16(handle, s.M, s.N, s.K, in.hA.p, in.hB.p, C.p);
    });
    gemm_00_cublas_f16(handle, s.M, s.N, s.K, ints.hA.p, ints.hB.p, C.p);
    const std::vector<float> gemmex_ints = C.download();
    print("00 cublasGemmEx (F16->F32)", gemmex, gemmex.ms);
    for (const RungF16& rung : kRungsF16) {
      const std::string name = std::string(rung.id) + " " + rung.name;
      const Result r = measure(name, true, &gemmex_ints, [&](const Inputs& in) { rung.run(s.M, s.N, s.K, in.hA.p, in.hB.p, C.p); });
      print(name, r, gemmex.ms);
      if (r.valid && s.M == 4096 && s.N == 4096 && s.K == 4096 && (wmma_best_4096 == 0 || r.ms < wmma_best_4096)) {
        wmma_best_4096 = r.ms;
        wmma_best_name = name;
      }
    }
    if (s.M == 4096 && s.N == 4096 && s.K == 4096) {
      sgemm_4096 = sgemm.ms;
      gemmex_4096 = gemmex.ms;
    }
    std::printf("\n");
  }
  HG_CUBLAS_CHECK(cublasDestroy(handle));

  if (simt_best_4096 > 0 && sgemm_4096 > 0)
    std::printf("GOAL 4096^3 best SIMT rung %s: %.1f%% of cuBLAS SGEMM (goal >= 70%%)\n", simt_best_name.c_str(),
                100.0 * sgemm_4096 / simt_best_4096);
  if (wmma_best_4096 > 0 && gemmex_4096 > 0)
    std::printf("GOAL 4096^3 best WMMA rung %s: %.1f%% of cuBLAS GemmEx F16 (goal >= 60%%)\n", wmma_best_name.c_str(),
                100.0 * gemmex_4096 / wmma_best_4096);
  std::printf("%s\n", failures == 0 ? "all kernels validated before timing" : "SOME KERNELS FAILED VALIDATION (no timing shown for them)");
  return failures == 0 ? 0 : 1;
}
