#pragma once
// Device query for the CUDA backend: is there a GPU, and what is it.
// Plain C++ declarations (no CUDA headers), so g++-compiled code may include this; a build
// without CUDA defines them in framework/cuda/no_cuda.cpp (no GPU, and no_gpu_reason says why).
#include <cstddef>
#include <string>

namespace hg::cuda {

// Number of usable GPUs; 0 when there is no GPU or no driver (never throws).
int device_count();

// Why there is no usable GPU, in one line ("" when there is one), e.g.
// "no GPU: cudaGetDeviceCount returned cudaErrorInsufficientDriver (CUDA driver version is
// insufficient for CUDA runtime version)".
std::string no_gpu_reason();

struct DeviceInfo {
  int index = 0;
  std::string name;                 // "NVIDIA H200"
  int major = 0, minor = 0;         // compute capability, e.g. 9.0
  int sm_count = 0;                 // streaming multiprocessors
  size_t total_memory = 0;          // bytes of global memory
  size_t free_memory = 0;           // bytes free at the time of the query
  size_t shared_memory_per_block = 0;
  int warp_size = 32;
  bool tensor_cores() const { return major >= 7; }   // WMMA F16 needs sm_70+
  bool cp_async() const { return major >= 8; }       // cp.async needs sm_80+
};

// Describe GPU `index` (throws std::runtime_error when it does not exist).
DeviceInfo device_info(int index = 0);

// One line: "NVIDIA H200, sm_90, 132 SMs, 139.8 GiB".
std::string describe(const DeviceInfo& info);

// Wait until every kernel and copy issued so far has finished (checks for errors).
void synchronize();

}  // namespace hg::cuda
