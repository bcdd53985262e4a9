#pragma once
// A tiny harness for the GPU test binaries (tests/gpu/test_*.cu), in the style of llm.c's
// dev/cuda: each check compares GPU output with a CPU reference and prints one line,
//   OK     relu forward F32 (n=1000)          max|diff| 0 (atol 0, rtol 0)
// and a failing one prints what it takes to fix it offline, without a GPU: the check's name
// (op, dtype, shapes), how many elements are off, the first one with its index (and (row, col)
// when the check is told the row length), its values, and the worst one:
//   NOT OK softmax F32 (rows=7, cols=1000)    3 of 7000 off; first [12] (0, 12) got 0.51 want 0.507 (diff 3e-03,
//          allowed 1e-05); worst [4013] (4, 13) ...; atol 1e-05 rtol 1e-04
// followed by up to 8 mismatching elements, one per line. GPU runs are rare and short: the
// output is the only evidence a failure leaves.
// A binary returns 0 when every check passed, 1 when one failed, and 77 (ctest: SKIPPED)
// with a printed reason when there is no GPU: a test that did not run never counts as passed.
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace hg::test {

// True under tests/gpu/run.sh's memcheck step (HG_GPU_TEST_SMALL=1): compute-sanitizer makes
// every launch many times slower, so tests leave out their largest shapes.
inline bool small_run() {
  static const bool small = [] {
    const char* v = std::getenv("HG_GPU_TEST_SMALL");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return small;
}

// True on a simulated GPU (tests/gpu/gpusim.sh sets HG_GPU_SIMULATOR=1): the simulator runs
// the program's own kernels only, not cuBLAS's, and a few thousand times slower than a GPU, so
// tests leave out cuBLAS and keep their shapes small (every edge case stays).
inline bool simulated() {
  static const bool sim = [] {
    const char* v = std::getenv("HG_GPU_SIMULATOR");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return sim;
}

// The first n elements of v (a check on part of a buffer).
inline std::vector<float> head(const std::vector<float>& v, size_t n) {
  return std::vector<float>(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n < v.size() ? n : v.size()));
}

struct Checker {
  int failures = 0, checks = 0;
  std::FILE* out = stdout;  // where the lines go (the CPU test of this harness reads them back)

  // |got - want| <= atol + rtol * |want| for every element (NaN never passes; equal values,
  // infinities included, always do). `cols`, when given, is the row length of a matrix: the
  // report then names (row, col) too.
  bool close(const std::string& what, const std::vector<float>& got, const std::vector<float>& want,
             double atol, double rtol, size_t cols = 0) {
    ++checks;
    if (got.size() != want.size()) {
      std::fprintf(out, "NOT OK %-44s size %zu, want %zu\n", what.c_str(), got.size(), want.size());
      ++failures;
      return false;
    }
    double worst = 0, worst_excess = -1;
    size_t worst_at = 0, bad = 0;
    std::vector<size_t> first_bad;
    for (size_t i = 0; i < got.size(); ++i) {
      const double d = got[i] == want[i] ? 0.0 : std::fabs(double(got[i]) - double(want[i]));
      const double allowed = rtol == 0 ? atol : atol + rtol * std::fabs(double(want[i]));
      if (!(d <= allowed)) {  // written so that NaN fails
        ++bad;
        if (first_bad.size() < 8) first_bad.push_back(i);
      }
      const double excess = std::isnan(d) ? 1e300 : d - allowed;
      if (excess > worst_excess) { worst_excess = excess; worst_at = i; }
      if (std::isnan(d) || d > worst) worst = std::isnan(d) ? NAN : d;
    }
    if (bad == 0) {
      std::fprintf(out, "OK     %-44s max|diff| %.3g (atol %.3g, rtol %.3g)\n", what.c_str(), worst, atol, rtol);
      return true;
    }
    ++failures;
    auto where = [&](size_t i) {
      char buf[64];
      if (cols > 0) std::snprintf(buf, sizeof buf, "[%zu] (%zu, %zu)", i, i / cols, i % cols);
      else std::snprintf(buf, sizeof buf, "[%zu]", i);
      return std::string(buf);
    };
    auto element = [&](size_t i) {
      const double allowed = rtol == 0 ? atol : atol + rtol * std::fabs(double(want[i]));
      char buf[200];
      std::snprintf(buf, sizeof buf, "%s got %.9g want %.9g (diff %.3g, allowed %.3g)", where(i).c_str(), got[i],
                    want[i], std::fabs(double(got[i]) - double(want[i])), allowed);
      return std::string(buf);
    };
    std::fprintf(out, "NOT OK %-44s %zu of %zu off; first %s; worst %s; atol %.3g rtol %.3g\n", what.c_str(), bad,
                got.size(), element(first_bad[0]).c_str(), element(worst_at).c_str(), atol, rtol);
    for (size_t i : first_bad) std::fprintf(out, "         mismatch %s\n", element(i).c_str());
    return false;
  }

  // Bit for bit: every element equal (used with small-integer inputs, whose sums are exact).
  bool exact(const std::string& what, const std::vector<float>& got, const std::vector<float>& want, size_t cols = 0) {
    return close(what + " [bit-exact]", got, want, 0.0, 0.0, cols);
  }

  // |got[i] - want[i]| <= bound[i] for every i (a bound per element, e.g. a GEMM error bound).
  bool within(const std::string& what, const std::vector<float>& got, const std::vector<float>& want,
              const std::vector<float>& bound, size_t cols = 0) {
    ++checks;
    size_t bad = 0, first = 0;
    double worst_ratio = 0;
    for (size_t i = 0; i < got.size() && i < want.size() && i < bound.size(); ++i) {
      const double d = got[i] == want[i] ? 0.0 : std::fabs(double(got[i]) - double(want[i]));
      if (!(d <= bound[i])) {
        if (bad++ == 0) first = i;
      }
      const double ratio = bound[i] > 0 ? d / bound[i] : (d == 0 ? 0 : 1e300);
      if (std::isnan(d) || ratio > worst_ratio) worst_ratio = std::isnan(d) ? NAN : ratio;
    }
    const bool ok = bad == 0 && got.size() == want.size() && got.size() == bound.size();
    if (ok) {
      std::fprintf(out, "OK     %-44s worst |diff| / bound %.3g\n", what.c_str(), worst_ratio);
      return true;
    }
    ++failures;
    if (got.size() != want.size() || got.size() != bound.size()) {
      std::fprintf(out, "NOT OK %-44s sizes %zu, %zu, bound %zu\n", what.c_str(), got.size(), want.size(), bound.size());
      return false;
    }
    char at[64];
    if (cols > 0) std::snprintf(at, sizeof at, "[%zu] (%zu, %zu)", first, first / cols, first % cols);
    else std::snprintf(at, sizeof at, "[%zu]", first);
    std::fprintf(out, "NOT OK %-44s %zu of %zu outside the bound; first %s got %.9g want %.9g bound %.3g; worst |diff| / bound %.3g\n",
                what.c_str(), bad, got.size(), at, got[first], want[first], double(bound[first]), worst_ratio);
    return false;
  }

  bool expect(const std::string& what, bool ok, const std::string& detail = "") {
    ++checks;
    std::fprintf(out, "%s %-44s %s\n", ok ? "OK    " : "NOT OK", what.c_str(), detail.c_str());
    if (!ok) ++failures;
    return ok;
  }

  int finish() const {
    std::fprintf(out, "%d of %d checks passed\n", checks - failures, checks);
    return failures == 0 ? 0 : 1;
  }
};

// A device buffer of T that frees itself (through the caching allocator).
template <class T>
struct DeviceBuffer {
  T* ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : ptr(static_cast<T*>(hg::cuda::device_malloc(count * sizeof(T)))), n(count) {}
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    hg::cuda::copy_host_to_device(ptr, host.data(), n * sizeof(T));
  }
  ~DeviceBuffer() { hg::cuda::device_free(ptr); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  std::vector<T> to_host() const {
    std::vector<T> h(n);
    hg::cuda::copy_device_to_host(h.data(), ptr, n * sizeof(T));
    return h;
  }
};

}  // namespace hg::test

// Body of main() for a GPU test: skip with a reason when there is no GPU, report exceptions.
// An exception ends the binary: the checks before it are counted, and the message says where.
#define HG_GPU_TEST_MAIN(run_function)                                                    \
  int main() {                                                                            \
    if (!hg::cuda::available()) {                                                         \
      std::printf("SKIP: %s\n", hg::cuda::no_gpu_reason().c_str());                       \
      return 77;                                                                          \
    }                                                                                     \
    hg::test::Checker checker;                                                            \
    try {                                                                                 \
      std::printf("GPU: %s\n", hg::cuda::describe(hg::cuda::device_info(0)).c_str());     \
      run_function(checker);                                                              \
      return checker.finish();                                                            \
    } catch (const std::exception& e) {                                                   \
      std::printf("NOT OK: exception after %d checks (%d failed): %s\n", checker.checks,  \
                  checker.failures, e.what());                                            \
      std::fflush(stdout);                                                                \
      return 1;                                                                           \
    }                                                                                     \
  }
