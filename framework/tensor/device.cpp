#include "framework/tensor/device.h"

#include <algorithm>
#include <stdexcept>

#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"  // a build without CUDA: framework/cuda/no_cuda.cpp
#include "framework/version.h"

namespace hg {

Device parse_device(const std::string& name) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "cpu") return Device::CPU;
  if (s == "cuda" || s == "gpu") return Device::CUDA;
  throw std::invalid_argument("unknown device '" + name + "' (expected cpu or cuda)");
}

bool cuda_available() { return hg::cuda::available(); }

void require_cuda() {
  if (!built_with_cuda()) throw std::runtime_error("built without CUDA; use --device cpu");
  if (!hg::cuda::available())
    throw std::runtime_error("no usable CUDA GPU on this machine (" + hg::cuda::no_gpu_reason() +
                             "); use --device cpu");
}

}  // namespace hg
