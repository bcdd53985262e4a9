// The "no GPU" line (cuda/runtime/no_gpu.h): a machine without a GPU is told so, not told
// that its driver is too old.
#include <doctest/doctest.h>

#include <string>

#include "cuda/runtime/no_gpu.h"

TEST_CASE("no driver on a machine without a GPU reads as 'no GPU found', not 'driver insufficient'") {
  const std::string m = hg::cuda::no_gpu_message(
      "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version");
  INFO(m);
  CHECK(m.rfind("no GPU found", 0) == 0);
  CHECK(m.find("insufficient for CUDA runtime version") == std::string::npos);
  CHECK(m.find("cudaErrorInsufficientDriver") != std::string::npos);  // the code is still there to look up
}

TEST_CASE("no device, and any other error, keep their names") {
  CHECK(hg::cuda::no_gpu_message("cudaErrorNoDevice", "no CUDA-capable device is detected").rfind("no GPU found", 0) == 0);
  const std::string other = hg::cuda::no_gpu_message("cudaErrorUnknown", "unknown error");
  CHECK(other == "no GPU: cudaGetDeviceCount returned cudaErrorUnknown (unknown error)");
}
