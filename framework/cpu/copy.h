#pragma once
// framework/cpu/copy.h — moving numbers between layouts and dtypes on the CPU.
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg::cpu {

// Copy the elements of a (possibly strided) CPU view into `dst`, row-major, same dtype.
void copy_to_contiguous(const TensorImpl& src, void* dst);

// dst[i] = src[i] converted from `from` to `to` (rounding to nearest even when narrowing).
// OpenMP-parallel for large n.
void convert(const void* src, DType from, void* dst, DType to, int64_t n);

// The same on one thread, for a block inside a loop that is already parallel.
void convert_block(const void* src, DType from, void* dst, DType to, int64_t n);

// Set n elements of dtype `t` to `value` (rounded to t).
void fill(void* dst, DType t, int64_t n, double value);

}  // namespace hg::cpu
