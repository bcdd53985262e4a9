#pragma once
// framework/tensor/storage.h — one block of memory that tensors share.
//
// A Tensor is a *view*: (storage, offset, shape, strides, dtype). reshape and slice make
// new views of the same Storage, so they copy nothing; the shared_ptr frees the block when
// the last view goes away.
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "framework/tensor/device.h"

namespace hg {

// A host allocation that failed: a std::bad_alloc, as any failed allocation in C++ (so one
// `catch (const std::bad_alloc&)` sees them all, e.g. to say what a model needs), whose
// what() names the size.
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

struct Storage {
  void* data = nullptr;  // CPU: 64-byte aligned host memory; CUDA: device memory
  size_t bytes = 0;
  Device device = Device::CPU;

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();

  // Uninitialised memory of `bytes` bytes on `device` (throws naming the size on failure).
  static std::shared_ptr<Storage> allocate(size_t bytes, Device device);
};

}  // namespace hg
