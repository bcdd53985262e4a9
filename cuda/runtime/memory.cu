// The caching allocator and the copies declared in memory.h (read that header first).
//
//   device_malloc(n): round n up to 512 bytes -> look in free_blocks[rounded] -> reuse, or
//                     cudaMalloc (on out-of-memory: empty the cache, try once more, then throw)
//   device_free(p):   move p from `live` to free_blocks[its rounded size]; no driver call
//
// Blocks are never returned at program exit: the allocator is created with `new` and never
// destroyed, because the CUDA runtime may already be shut down when static destructors run
// (cudaFree would then fail). The driver reclaims all device memory when the process ends.
#include "cuda/runtime/memory.h"

#include "cuda/runtime/check.h"
#include "cuda/runtime/device.h"

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace hg::cuda {
namespace {

constexpr size_t kGranularity = 512;  // also keeps every block 256-byte aligned, as cudaMalloc does

struct Block {
  size_t rounded;    // size of the block as allocated (the free-list key)
  size_t requested;  // what the caller asked for (counted in live_bytes)
};

struct Allocator {
  std::mutex mu;
  std::unordered_map<void*, Block> live;               // handed out, not yet freed
  std::map<size_t, std::vector<void*>> free_blocks;    // rounded size -> cached blocks
  size_t live_bytes = 0, peak_bytes = 0, cached_bytes = 0;

  void release_cache_locked() {
    // Take each block off the list before freeing it: if a cudaFree throws, no pointer that
    // was already given back to the driver stays cached (and is never freed twice).
    while (!free_blocks.empty()) {
      auto& [size, blocks] = *free_blocks.begin();
      while (!blocks.empty()) {
        void* p = blocks.back();
        blocks.pop_back();
        cached_bytes -= size;
        HG_CUDA_CHECK(cudaFree(p));
      }
      free_blocks.erase(free_blocks.begin());
    }
    cached_bytes = 0;
  }
};

Allocator& allocator() {
  static Allocator* a = new Allocator;  // never destroyed: see the comment at the top
  return *a;
}

std::string mib(size_t bytes) { return std::to_string(bytes / (1024.0 * 1024.0)) + " MiB"; }

}  // namespace

bool available() {
  static const bool has_gpu = device_count() > 0;  // asked once: the answer cannot change
  return has_gpu;
}

size_t allocation_granularity() { return kGranularity; }

void* device_malloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t rounded = (bytes + kGranularity - 1) / kGranularity * kGranularity;
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mu);

  void* p = nullptr;
  auto it = a.free_blocks.find(rounded);
  if (it != a.free_blocks.end() && !it->second.empty()) {  // reuse a cached block
    p = it->second.back();
    it->second.pop_back();
    a.cached_bytes -= rounded;
  } else {
    cudaError_t err = cudaMalloc(&p, rounded);
    if (err == cudaErrorMemoryAllocation) {  // cached blocks of other sizes may be in the way
      cudaGetLastError();
      a.release_cache_locked();
      err = cudaMalloc(&p, rounded);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error("device_malloc: cannot allocate " + std::to_string(bytes) + " bytes (" +
                               mib(bytes) + ") on the GPU: " + cudaGetErrorName(err) + " (" +
                               cudaGetErrorString(err) + "); live " + mib(a.live_bytes));
    }
  }
  a.live[p] = Block{rounded, bytes};
  a.live_bytes += bytes;
  if (a.live_bytes > a.peak_bytes) a.peak_bytes = a.live_bytes;
  return p;
}

void device_free(void* p) {
  if (p == nullptr) return;
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mu);
  auto it = a.live.find(p);
  if (it == a.live.end())
    throw std::invalid_argument("device_free: pointer was not returned by device_malloc (or was freed twice)");
  const Block b = it->second;
  a.live.erase(it);
  a.live_bytes -= b.requested;
  a.free_blocks[b.rounded].push_back(p);
  a.cached_bytes += b.rounded;
}

void empty_cache() {
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mu);
  a.release_cache_locked();
}

size_t live_bytes() {
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mu);
  return a.live_bytes;
}

size_t peak_bytes() {
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mu);
  return a.peak_bytes;
}

void reset_peak_bytes() {
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mu);
  a.peak_bytes = a.live_bytes;
}

size_t cached_bytes() {
  Allocator& a = allocator();
  std::lock_guard<std::mutex> lock(a.mu);
  return a.cached_bytes;
}

void copy_host_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  HG_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

void copy_device_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  HG_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

void copy_device_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  HG_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice));
}

void device_memset_zero(void* p, size_t bytes) {
  if (bytes == 0) return;
  HG_CUDA_CHECK(cudaMemset(p, 0, bytes));
}

// One thread per element, grid-stride: each copies the element's bits (W is a 2-, 4- or
// 8-byte word), so the fill needs no arithmetic and no knowledge of the format.
template <class W>
__global__ void fill_words_kernel(W* dst, W word, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = word;
}

template <class W>
void fill_words(void* dst, const void* element, int64_t n) {
  W word;
  std::memcpy(&word, element, sizeof(W));
  const int64_t blocks = (n + 255) / 256;
  fill_words_kernel<W><<<unsigned(blocks > 65535 ? 65535 : blocks), 256>>>(static_cast<W*>(dst), word, n);
  HG_CUDA_CHECK(cudaGetLastError());
}

void device_fill(void* dst, const void* element, size_t element_bytes, int64_t n) {
  if (n <= 0) return;
  switch (element_bytes) {
    case 2: return fill_words<uint16_t>(dst, element, n);
    case 4: return fill_words<uint32_t>(dst, element, n);
    case 8: return fill_words<uint64_t>(dst, element, n);
  }
  throw std::invalid_argument("device_fill: elements of " + std::to_string(element_bytes) +
                              " bytes (expected 2, 4 or 8)");
}

}  // namespace hg::cuda
