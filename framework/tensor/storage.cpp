#include "framework/tensor/storage.h"

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

#if HG_WITH_CUDA
#include "cuda/runtime/memory.h"
#endif

namespace hg {

Storage::~Storage() {
  if (!data) return;
  if (device == Device::CPU) {
    std::free(data);
  } else {
#if HG_WITH_CUDA
    hg::cuda::device_free(data);
#endif
  }
}

std::shared_ptr<Storage> Storage::allocate(size_t bytes, Device device) {
  auto s = std::make_shared<Storage>();
  s->bytes = bytes;
  s->device = device;
  if (device == Device::CPU) {
    // 64-byte alignment: a cache line, and what AVX-512 loads like. aligned_alloc wants a
    // size that is a multiple of the alignment.
    size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded == 0) rounded = 64;
    s->data = std::aligned_alloc(64, rounded);
    if (!s->data)
      throw std::runtime_error("out of host memory allocating " + std::to_string(bytes) + " bytes");
  } else {
    require_cuda();
#if HG_WITH_CUDA
    s->data = hg::cuda::device_malloc(bytes == 0 ? 1 : bytes);
#endif
  }
  return s;
}

}  // namespace hg
