#pragma once
// HG_HD marks a function that runs on both sides: in the host program and inside a kernel.
//
// Index math (tile -> matrix coordinates, shared-memory layouts) is written once with HG_HD,
// used by the kernels, and unit-tested on the CPU by a plain g++ build (tests/unit/
// test_cuda_*.cpp). Under nvcc it expands to __host__ __device__; under g++ to nothing.
#if defined(__CUDACC__)
#define HG_HD __host__ __device__ __forceinline__
#else
#define HG_HD inline
#endif
