#pragma once
// A tiny harness for the GPU test binaries (tests/gpu/test_*.cu), in the style of llm.c's
// dev/cuda: each check compares GPU output with a CPU reference and prints one line,
//   OK     relu forward F32 (n=1000)          max|diff| 0 (allowed 0)
//   NOT OK softmax F32 (rows=7, cols=1000)    max|diff| 3.1e-03 at [12] got 0.51 want 0.507
// A binary returns 0 when every check passed, 1 when one failed, and 77 (ctest: SKIPPED)
// with a printed reason when there is no GPU: a test that did not run never counts as passed.
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"

#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace hg::test {

struct Checker {
  int failures = 0, checks = 0;

  // |got - want| <= atol + rtol * |want| for every element (NaN never passes).
  bool close(const std::string& what, const std::vector<float>& got, const std::vector<float>& want,
             double atol, double rtol) {
    ++checks;
    double worst = 0, worst_excess = -1;
    size_t at = 0;
    bool ok = got.size() == want.size();
    for (size_t i = 0; ok && i < got.size(); ++i) {
      // Equal values (also equal infinities) differ by 0; NaN never equals anything.
      const double d = got[i] == want[i] ? 0.0 : std::fabs(double(got[i]) - double(want[i]));
      const double allowed = rtol == 0 ? atol : atol + rtol * std::fabs(double(want[i]));
      if (!(d <= allowed)) ok = false;  // written so that NaN fails
      const double excess = std::isnan(d) ? 1e300 : d - allowed;
      if (excess > worst_excess) { worst_excess = excess; at = i; }
      if (std::isnan(d) || d > worst) worst = std::isnan(d) ? NAN : d;
    }
    if (got.size() != want.size()) {
      std::printf("NOT OK %-44s size %zu, want %zu\n", what.c_str(), got.size(), want.size());
    } else if (ok) {
      std::printf("OK     %-44s max|diff| %.3g (atol %.3g, rtol %.3g)\n", what.c_str(), worst, atol, rtol);
    } else {
      std::printf("NOT OK %-44s max|diff| %.3g at [%zu] got %.9g want %.9g (atol %.3g, rtol %.3g)\n",
                  what.c_str(), worst, at, got[at], want[at], atol, rtol);
    }
    if (!ok) ++failures;
    return ok;
  }

  // Bit for bit: every element equal (used with small-integer inputs, whose sums are exact).
  bool exact(const std::string& what, const std::vector<float>& got, const std::vector<float>& want) {
    return close(what + " [bit-exact]", got, want, 0.0, 0.0);
  }

  bool expect(const std::string& what, bool ok, const std::string& detail = "") {
    ++checks;
    std::printf("%s %-44s %s\n", ok ? "OK    " : "NOT OK", what.c_str(), detail.c_str());
    if (!ok) ++failures;
    return ok;
  }

  int finish() const {
    std::printf("%d of %d checks passed\n", checks - failures, checks);
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
#define HG_GPU_TEST_MAIN(run_function)                                                    \
  int main() {                                                                            \
    if (!hg::cuda::available()) {                                                         \
      std::printf("SKIP: %s\n", hg::cuda::no_gpu_reason().c_str());                       \
      return 77;                                                                          \
    }                                                                                     \
    try {                                                                                 \
      std::printf("GPU: %s\n", hg::cuda::describe(hg::cuda::device_info(0)).c_str());     \
      hg::test::Checker checker;                                                          \
      run_function(checker);                                                              \
      return checker.finish();                                                            \
    } catch (const std::exception& e) {                                                   \
      std::printf("NOT OK: exception: %s\n", e.what());                                   \
      return 1;                                                                           \
    }                                                                                     \
  }
