#include "framework/tensor/storage.h"

#include <malloc.h>

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>

#include "cuda/runtime/memory.h"  // a build without CUDA: framework/cuda/no_cuda.cpp
#include "framework/memory/accountant.h"

namespace hg {

Storage::~Storage() {
  if (!data) return;
  memory::on_free(*this);
  if (device == Device::CPU) {
    std::free(data);
  } else {
    hg::cuda::device_free(data);
  }
}

// Why this exists: glibc serves blocks above M_MMAP_THRESHOLD (128 KiB to 32 MiB, adapting)
// with a fresh mmap and returns them to the OS on free. A training step allocates the same
// large activations and im2col buffers every step, so every step would page-fault and the
// kernel would zero every page again — measured at ~15% of a SmallCNN step. Keeping large
// blocks in the heap (and not trimming it) lets the next step reuse the same memory.
// Called once, before the first tensor is allocated. Process-wide, like any malloc tuning.
static void tune_host_allocator() {
  static const bool once = [] {
    mallopt(M_MMAP_THRESHOLD, 1 << 30);  // blocks up to 1 GiB come from the heap
    mallopt(M_TRIM_THRESHOLD, 1 << 30);  // keep up to 1 GiB of freed heap for reuse
    return true;
  }();
  (void)once;
}

std::shared_ptr<Storage> Storage::allocate(size_t bytes, Device device) {
  tune_host_allocator();
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
      throw OutOfMemory("out of host memory allocating " + std::to_string(bytes) + " bytes");
  } else {
    require_cuda();
    s->data = hg::cuda::device_malloc(bytes == 0 ? 1 : bytes);
  }
  memory::on_allocate(*s);  // counted only once the memory is really there
  return s;
}

}  // namespace hg
