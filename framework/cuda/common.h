#pragma once
// framework/cuda/common.h — what the wrappers of the GPU layer share (framework/cuda/*.cpp).
// Not for the ops: they call the family headers (elementwise.h, matmul.h, ...).
//
// The pattern of every wrapper: check what the kernels need (a tensor on the GPU, row-major,
// a dtype with kernels), allocate the result with gpu_empty, call one launcher of cuda/ with
// raw device pointers. Kernels that exist only in F32 (pooling, batch norm, dropout's mask)
// get F32 copies of F16/BF16 inputs (as_f32), and their results are rounded back once to the
// input's dtype (round_back).
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg::cuda {

// t's dtype, which is what the kernels take (hg::DType: F32, F16, BF16); throws naming `op`
// for F64, which has no kernels on the GPU.
DType kernel_dtype(const char* op, const Tensor& t);

// Every kernel reads and writes plain row-major memory on the GPU; throws naming op and what.
void need_gpu_contiguous(const char* op, const Tensor& t, const char* what);

// A new tensor on the GPU, uninitialised.
Tensor gpu_empty(const Shape& shape, DType dt);

// x itself when it is F32, else an F32 copy: the input of an F32-only kernel.
Tensor as_f32(const Tensor& x);
// The F32 result of an F32-only kernel, rounded once to `dt` (the input's dtype); y itself
// when dt is F32, and an undefined y (a gradient not asked for) stays undefined.
Tensor round_back(const Tensor& y, DType dt);

// float* of an F32 tensor on the GPU (the F32-only kernels' arguments).
inline float* f32_data(const Tensor& t) { return static_cast<float*>(t.raw_data()); }

// s seen as (outer, n, inner) around `dim`: what the reduction and softmax kernels take.
void split_at(const Shape& s, int64_t dim, int64_t& outer, int64_t& n, int64_t& inner);

// C (M, N) F32 = op(A)·op(B) for device buffers A, B of dtype dt, on the path
// cuda/gemm/matmul.h picks (matmul.cpp): used by matmul, linear and conv2d.
void gemm_f32_out(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A, const void* B,
                  float* C);

}  // namespace hg::cuda
