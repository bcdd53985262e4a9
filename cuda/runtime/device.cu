// Device query: is there a GPU, and what is it. Every answer goes through here, so a machine
// with no GPU (or no driver) is detected in one place.
#include "cuda/runtime/device.h"

#include <cuda_runtime.h>

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

}  // namespace hg::cuda
