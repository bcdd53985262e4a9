// CPU tests of the CUDA runtime's error reporting and GPU detection. They need the CUDA
// toolkit at build time but no GPU: the check macros are tested on error codes given
// directly, and detection must agree with itself on a machine with or without a GPU.
// Built without CUDA, this file has no test cases.
#include <doctest/doctest.h>

#if HG_WITH_CUDA
#include "cuda/runtime/check.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"

#include <string>

TEST_CASE("HG_CUDA_CHECK names file, line, the call and the error") {
  CHECK_NOTHROW(HG_CUDA_CHECK(cudaSuccess));
  std::string msg;
  const int line = __LINE__ + 1;
  try { HG_CUDA_CHECK(cudaErrorInvalidValue); } catch (const std::runtime_error& e) { msg = e.what(); }
  INFO(msg);
  CHECK(msg.find("test_cuda_check.cpp:" + std::to_string(line)) != std::string::npos);
  CHECK(msg.find("cudaErrorInvalidValue") != std::string::npos);
  CHECK(msg.find("invalid argument") != std::string::npos);  // cudaGetErrorString's text
  CHECK(msg.find("failed") != std::string::npos);
}

TEST_CASE("HG_CUBLAS_CHECK names file, line and the cuBLAS status") {
  CHECK_NOTHROW(HG_CUBLAS_CHECK(CUBLAS_STATUS_SUCCESS));
  std::string msg;
  const int line = __LINE__ + 1;
  try { HG_CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED); } catch (const std::runtime_error& e) { msg = e.what(); }
  INFO(msg);
  CHECK(msg.find("test_cuda_check.cpp:" + std::to_string(line)) != std::string::npos);
  CHECK(msg.find("CUBLAS_STATUS_NOT_INITIALIZED") != std::string::npos);
}

TEST_CASE("GPU detection agrees with itself, with or without a GPU") {
  const int n = hg::cuda::device_count();
  CHECK(n >= 0);
  CHECK(hg::cuda::available() == (n > 0));
  const std::string why = hg::cuda::no_gpu_reason();
  INFO("no_gpu_reason: ", why);
  CHECK(why.empty() == (n > 0));
  if (n == 0) CHECK(why.rfind("no GPU", 0) == 0);
}

TEST_CASE("allocator bookkeeping without a GPU touches no driver") {
  // Zero-byte requests and nullptr frees are answered without calling CUDA, so they are
  // valid on any machine.
  CHECK(hg::cuda::device_malloc(0) == nullptr);
  CHECK_NOTHROW(hg::cuda::device_free(nullptr));
  CHECK(hg::cuda::live_bytes() == 0);
  CHECK(hg::cuda::allocation_granularity() % 256 == 0);
}
#endif  // HG_WITH_CUDA (built without CUDA this binary has no test cases: nothing to test)
