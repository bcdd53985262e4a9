#pragma once
// Error checks for every CUDA runtime and cuBLAS call.
//
//   HG_CUDA_CHECK(cudaMalloc(&p, bytes));
//   HG_CUBLAS_CHECK(cublasSgemm(handle, ...));
//   HG_CUDA_CHECK(cudaGetLastError());          // after a kernel launch: a bad launch config
//
// A failed call throws std::runtime_error with file, line, the call as written and the
// error's name and text, e.g.
//   cuda/runtime/memory.cu:57: cudaMalloc(&p, bytes) failed: cudaErrorMemoryAllocation (out of memory)
// Kernels run asynchronously: an error inside a kernel surfaces at the next synchronising
// call, which is then the line the message names.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace hg::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so the caller may recover (e.g. free and retry)
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t st, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: cuBLAS status " + std::to_string(static_cast<int>(st)) + " (" +
                           cublasGetStatusString(st) + ")");
}

}  // namespace hg::cuda

#define HG_CUDA_CHECK(call)                                                      \
  do {                                                                           \
    cudaError_t hg_err_ = (call);                                                \
    if (hg_err_ != cudaSuccess)                                                  \
      ::hg::cuda::throw_cuda_error(hg_err_, #call, __FILE__, __LINE__);         \
  } while (0)

#define HG_CUBLAS_CHECK(call)                                                    \
  do {                                                                           \
    cublasStatus_t hg_st_ = (call);                                              \
    if (hg_st_ != CUBLAS_STATUS_SUCCESS)                                         \
      ::hg::cuda::throw_cublas_error(hg_st_, #call, __FILE__, __LINE__);        \
  } while (0)
