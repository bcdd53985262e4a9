#pragma once
// GPU memory for the framework: a caching allocator with byte counters, and copies.
//
// This header is the contract the engine codes Tensor::to(Device::CUDA) against. It is plain
// C++ (no CUDA headers), so g++-compiled framework code includes it in every build: without
// CUDA, framework/cuda/no_cuda.cpp defines it (no GPU; allocating one says "built without CUDA").
//
// Why a caching allocator: cudaMalloc and cudaFree are slow (they may synchronise the whole
// device), and a training step allocates and frees the same tensor sizes over and over.
// device_free() keeps the block in a free list keyed by its (rounded) size; the next
// device_malloc() of that size takes it back without calling the driver. Training repeats the
// same shapes every step, so after the first step almost no call reaches cudaMalloc.
// (PyTorch's allocator also splits large blocks and keeps per-stream pools; we do not.)
//
// Counters, for chapter 12 (memory per parameter, activations):
//   live_bytes()  bytes requested by device_malloc and not yet freed (what tensors hold)
//   peak_bytes()  the largest live_bytes() since the start or the last reset_peak_bytes()
//   cached_bytes() bytes in freed blocks kept for reuse (held from the driver, not live)
// All functions are thread-safe. Copies are synchronous (they return when the data is there).
#include <cstddef>
#include <cstdint>
#include <utility>

namespace hg::cuda {

bool available();                        // a usable GPU is present (device_count() > 0)
void* device_malloc(size_t bytes);       // caching allocator; throws std::runtime_error naming the size
void  device_free(void* p);              // nullptr is a no-op; a pointer not from device_malloc throws
void  copy_host_to_device(void* dst, const void* src, size_t bytes);
void  copy_device_to_host(void* dst, const void* src, size_t bytes);
void  copy_device_to_device(void* dst, const void* src, size_t bytes);
size_t live_bytes(); size_t peak_bytes(); void reset_peak_bytes();

// Additions beyond the contract.
size_t cached_bytes();                   // freed blocks kept for reuse
void   empty_cache();                    // hand every cached block back to the driver
void   device_memset_zero(void* p, size_t bytes);   // fill with zero bytes (0.0f, +0 half)
// dst[0..n) = n copies of one element: the element_bytes (2, 4 or 8) bytes at `element`, in
// host memory. Tensor::full and fill_ on the GPU: the value is rounded to its dtype once on
// the host (the CPU's own conversion, so both devices hold the same bits), then written on
// the device — no host buffer of n elements, no upload.
void   device_fill(void* dst, const void* element, size_t element_bytes, int64_t n);
size_t allocation_granularity();         // sizes are rounded up to a multiple of this (512)

// A temporary device buffer that goes back to the allocator when it goes out of scope, also
// when an exception passes through (a failed launch, a refused size):
//   DeviceTemp cols(bytes);  kernel<<<...>>>(cols.as<float>());   // freed at the closing brace
// Freeing right after the launches is safe: the block is reused only by later work on the same
// (default) stream, which runs after them.
class DeviceTemp {
 public:
  DeviceTemp() = default;
  explicit DeviceTemp(size_t bytes) : p_(device_malloc(bytes)) {}
  ~DeviceTemp() { device_free(p_); }
  DeviceTemp(DeviceTemp&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  DeviceTemp& operator=(DeviceTemp&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  DeviceTemp(const DeviceTemp&) = delete;
  DeviceTemp& operator=(const DeviceTemp&) = delete;
  void* get() const { return p_; }
  template <class T>
  T* as() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
};

}  // namespace hg::cuda
