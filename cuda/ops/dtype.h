#pragma once
// The storage types the CUDA ops read and write. The math inside every kernel is F32: a
// kernel loads F16/BF16, computes in F32 and rounds the result back once (RNE), which is what
// the CPU engine does too, so the two agree up to the order of summations.
//
// Plain C++ (no CUDA headers): the framework maps its hg::DType onto this with a switch.
// Buffers are passed as void* with a Dtype beside them; functions that only exist in F32
// take float*.
#include <cstddef>
#include <cstdint>

namespace hg::cuda {

enum class Dtype { F32, F16, BF16 };

inline size_t dtype_bytes(Dtype t) { return t == Dtype::F32 ? 4 : 2; }
inline const char* dtype_label(Dtype t) { return t == Dtype::F32 ? "F32" : t == Dtype::F16 ? "F16" : "BF16"; }

}  // namespace hg::cuda
