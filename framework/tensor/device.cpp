#include "framework/tensor/device.h"

#include <algorithm>
#include <stdexcept>

#if HG_WITH_CUDA
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"
#endif

namespace hg {

Device parse_device(const std::string& name) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "cpu") return Device::CPU;
  if (s == "cuda" || s == "gpu") return Device::CUDA;
  throw std::invalid_argument("unknown device '" + name + "' (expected cpu or cuda)");
}

bool cuda_available() {
#if HG_WITH_CUDA
  return hg::cuda::available();
#else
  return false;
#endif
}

void require_cuda() {
#if HG_WITH_CUDA
  if (!hg::cuda::available())
    throw std::runtime_error("no usable CUDA GPU on this machine (" + hg::cuda::no_gpu_reason() +
                             "); use --device cpu");
#else
  throw std::runtime_error("built without CUDA; use --device cpu");
#endif
}

}  // namespace hg
