#pragma once
// The one line that says why there is no GPU, from what cudaGetDeviceCount returned. Plain
// strings in, so a CPU-only build compiles and tests it (tests/unit/test_no_gpu_message.cpp).
//
// The CUDA runtime's own text misleads on the common case: a machine with no GPU usually has
// no NVIDIA driver either, and cudaGetDeviceCount then returns cudaErrorInsufficientDriver,
// "CUDA driver version is insufficient for CUDA runtime version" — as if a driver update
// would help. What the learner needs to read first is "no GPU found".
#include <string>

namespace hg::cuda {

// error_name: cudaGetErrorName's answer ("cudaErrorNoDevice"); error_text: cudaGetErrorString's.
inline std::string no_gpu_message(const std::string& error_name, const std::string& error_text) {
  if (error_name == "cudaErrorNoDevice")
    return "no GPU found (the NVIDIA driver sees no device; cudaGetDeviceCount returned cudaErrorNoDevice)";
  if (error_name == "cudaErrorInsufficientDriver")
    return "no GPU found (no NVIDIA driver is loaded, as on a machine without a GPU; cudaGetDeviceCount "
           "returned cudaErrorInsufficientDriver. With a GPU present, install or update its driver)";
  return "no GPU: cudaGetDeviceCount returned " + error_name + " (" + error_text + ")";
}

}  // namespace hg::cuda
