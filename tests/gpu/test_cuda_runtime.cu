// GPU test of cuda/runtime: the caching allocator's counters and reuse, copies both ways,
// and the error messages of HG_CUDA_CHECK / device_malloc on real failures.
#include "tests/gpu/gpu_test.h"

#include "cuda/gemm/ladder.h"
#include "cuda/runtime/check.h"

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>

static void run(hg::test::Checker& t) {
  using namespace hg::cuda;
  empty_cache();
  const size_t live0 = live_bytes();
  reset_peak_bytes();

  // Counters: live counts requested bytes; peak remembers the high-water mark.
  void* a = device_malloc(1000);
  void* b = device_malloc(3000);
  t.expect("live_bytes after 1000 + 3000", live_bytes() - live0 == 4000, std::to_string(live_bytes() - live0));
  device_free(a);
  t.expect("live_bytes after freeing 1000", live_bytes() - live0 == 3000, std::to_string(live_bytes() - live0));
  t.expect("peak_bytes keeps 4000", peak_bytes() - live0 == 4000, std::to_string(peak_bytes() - live0));
  t.expect("freed block is cached (1024 rounded)", cached_bytes() == 1024, std::to_string(cached_bytes()));

  // Reuse: a request that rounds to the same size gets the cached block back.
  void* c = device_malloc(1001);
  t.expect("same rounded size reuses the cached block", c == a);
  t.expect("cache empty after reuse", cached_bytes() == 0, std::to_string(cached_bytes()));
  t.expect("blocks are 256-byte aligned", reinterpret_cast<uintptr_t>(b) % 256 == 0);
  device_free(b);
  device_free(c);
  reset_peak_bytes();
  t.expect("reset_peak_bytes sets peak to live", peak_bytes() == live_bytes());

  // Copies: host -> device -> device -> host round trip.
  std::vector<float> h(12345);
  std::iota(h.begin(), h.end(), -100.0f);
  void* d1 = device_malloc(h.size() * sizeof(float));
  void* d2 = device_malloc(h.size() * sizeof(float));
  copy_host_to_device(d1, h.data(), h.size() * sizeof(float));
  copy_device_to_device(d2, d1, h.size() * sizeof(float));
  std::vector<float> back(h.size(), 0.0f);
  copy_device_to_host(back.data(), d2, h.size() * sizeof(float));
  t.exact("host -> device -> device -> host", back, h);
  device_memset_zero(d2, h.size() * sizeof(float));
  copy_device_to_host(back.data(), d2, h.size() * sizeof(float));
  t.exact("device_memset_zero", back, std::vector<float>(h.size(), 0.0f));
  device_free(d1);
  device_free(d2);

  // Out of memory: the message names the size.
  const size_t huge = size_t(1) << 50;  // 1 PiB
  std::string msg;
  try { device_malloc(huge); } catch (const std::runtime_error& e) { msg = e.what(); }
  t.expect("device_malloc(1 PiB) throws naming the size", msg.find(std::to_string(huge)) != std::string::npos, msg);

  // A real failing call: the check names file, line and the error.
  msg.clear();
  try { HG_CUDA_CHECK(cudaMemcpy(nullptr, h.data(), 16, cudaMemcpyHostToDevice)); } catch (const std::runtime_error& e) { msg = e.what(); }
  t.expect("HG_CUDA_CHECK on a bad cudaMemcpy", msg.find("test_cuda_runtime.cu:") != std::string::npos &&
                                                    msg.find("cudaError") != std::string::npos, msg);

  // A temporary goes back when an exception leaves its scope (DeviceTemp).
  const size_t live1 = live_bytes();
  try {
    DeviceTemp tmp(4096);
    throw std::runtime_error("a failing launch");
  } catch (const std::runtime_error&) {}
  t.expect("DeviceTemp freed when an exception leaves its scope", live_bytes() == live1, std::to_string(live_bytes() - live1));

  // ... and the launchers' temporaries with it: a tensor-core rung pads this C to 1,048,576 x 16,
  // allocates the padded copies, then refuses the grid (65,536 row tiles of 16: one more than
  // gridDim.y allows); the padded copies must go back.
  {
    const int M = 1048576, N = 1, K = 1;
    void* A = device_malloc(size_t(M) * K * 2);
    void* B = device_malloc(size_t(K) * N * 2);
    void* C = device_malloc(size_t(M) * N * 4);
    const size_t live2 = live_bytes();
    std::string refused;
    try {
      gemm::gemm_05_wmma(M, N, K, static_cast<const __half*>(A), static_cast<const __half*>(B), static_cast<float*>(C));
    } catch (const std::length_error& e) { refused = e.what(); }
    t.expect("rung 05 refuses 65536 row tiles with a message", refused.find("65535") != std::string::npos, refused);
    t.expect("... and its padded copies are freed", live_bytes() == live2, std::to_string(live_bytes() - live2));
    device_free(A);
    device_free(B);
    device_free(C);
  }

  // Freeing a pointer the allocator never gave out is refused.
  bool threw = false;
  try { device_free(reinterpret_cast<void*>(0x1234)); } catch (const std::invalid_argument&) { threw = true; }
  t.expect("device_free of a foreign pointer throws", threw);
}

HG_GPU_TEST_MAIN(run)
