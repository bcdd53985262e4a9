// Device query: is there a GPU, and what is it. Every answer goes through here, so a machine
// with no GPU (or no driver) is detected in one place.
#include "cuda/runtime/device.h"

#include "cuda/runtime/check.h"
#include "cuda/runtime/no_gpu.h"

#include <cstdio>

namespace hg::cuda {

int device_count() {
  int n = 0;
  // With no driver this returns cudaErrorInsufficientDriver (35); with no GPU,
  // cudaErrorNoDevice. Any error means: no usable GPU.
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return n;
}

std::string no_gpu_reason() {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return no_gpu_message(cudaGetErrorName(err), cudaGetErrorString(err));
  }
  if (n == 0) return "no GPU found (the CUDA driver reports 0 devices)";
  return "";
}

DeviceInfo device_info(int index) {
  cudaDeviceProp p{};
  HG_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
  DeviceInfo info;
  info.index = index;
  info.name = p.name;
  info.major = p.major;
  info.minor = p.minor;
  info.sm_count = p.multiProcessorCount;
  info.total_memory = p.totalGlobalMem;
  info.shared_memory_per_block = p.sharedMemPerBlock;
  info.warp_size = p.warpSize;
  int current = 0;
  HG_CUDA_CHECK(cudaGetDevice(&current));
  if (current == index) {
    size_t free_b = 0, total_b = 0;
    HG_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    info.free_memory = free_b;
  }
  return info;
}

std::string describe(const DeviceInfo& info) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, sm_%d%d, %d SMs, %.1f GiB", info.name.c_str(), info.major,
                info.minor, info.sm_count, info.total_memory / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

void synchronize() { HG_CUDA_CHECK(cudaDeviceSynchronize()); }

}  // namespace hg::cuda
