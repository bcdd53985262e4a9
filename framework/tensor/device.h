#pragma once
// framework/tensor/device.h — where a tensor's memory lives.
//
// A build without CUDA (built_with_cuda() is false) knows the name Device::CUDA but every attempt to
// use it throws "built without CUDA; use --device cpu".
#include <string>

namespace hg {

enum class Device { CPU, CUDA };

inline const char* device_name(Device d) { return d == Device::CPU ? "cpu" : "cuda"; }

// "cpu" or "cuda" (also "gpu"); throws std::invalid_argument naming the bad value.
Device parse_device(const std::string& name);

// True when this build has the CUDA backend and a GPU is present.
bool cuda_available();

// Throws std::runtime_error("built without CUDA; use --device cpu") in a CPU-only build,
// or a message saying no GPU was found when the build has CUDA but the machine has none.
void require_cuda();

}  // namespace hg
