#pragma once
// Broadcasting index math (NumPy/PyTorch rules), shared by the kernels and the CPU tests.
//
// Shapes are aligned on the right; a size-1 (or missing) dim of an input repeats along the
// output. We describe that by giving each input a stride of 0 along its repeated dims:
//
//   out (N, C) = a (N, C) + b (C)      ->  a strides (C, 1), b strides (0, 1)
//
// Then output element i (row-major multi-index (i_0 .. i_{d-1})) reads a at
// sum_k i_k * a_stride[k] and b at sum_k i_k * b_stride[k]. The same description, read the
// other way, is the backward: the gradient of b sums dY over the positions that read the
// same b element (sum_to).
#include "cuda/runtime/hd.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace hg::cuda {

constexpr int kMaxDims = 8;

struct Broadcast {
  int ndim = 0;
  int64_t out_shape[kMaxDims] = {};
  int64_t a_stride[kMaxDims] = {};  // 0 along dims where a is repeated
  int64_t b_stride[kMaxDims] = {};
  int64_t numel() const {
    int64_t n = 1;
    for (int k = 0; k < ndim; ++k) n *= out_shape[k];
    return n;
  }
};

// Offsets into a and b of output element i.
HG_HD void broadcast_offsets(const Broadcast& bc, int64_t i, int64_t& ia, int64_t& ib) {
  ia = 0;
  ib = 0;
  for (int k = bc.ndim - 1; k >= 0; --k) {  // peel off the fastest dim first
    const int64_t idx = i % bc.out_shape[k];
    i /= bc.out_shape[k];
    ia += idx * bc.a_stride[k];
    ib += idx * bc.b_stride[k];
  }
}

// Build the description for contiguous a and b; throws std::invalid_argument naming both
// shapes when they do not broadcast.
inline Broadcast make_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  auto shape_str = [](const std::vector<int64_t>& s) {
    std::string r = "(";
    for (size_t k = 0; k < s.size(); ++k) r += (k ? ", " : "") + std::to_string(s[k]);
    return r + ")";
  };
  Broadcast bc;
  bc.ndim = static_cast<int>(a.size() > b.size() ? a.size() : b.size());
  if (bc.ndim > kMaxDims) throw std::invalid_argument("broadcast: more than 8 dims");
  if (bc.ndim == 0) {  // two scalars
    bc.ndim = 1;
    bc.out_shape[0] = 1;
    return bc;
  }
  int64_t sa = 1, sb = 1;  // running contiguous strides of a and b
  for (int k = bc.ndim - 1; k >= 0; --k) {
    const int ka = k - (bc.ndim - static_cast<int>(a.size())), kb = k - (bc.ndim - static_cast<int>(b.size()));
    const int64_t da = ka >= 0 ? a[ka] : 1, db = kb >= 0 ? b[kb] : 1;
    if (da != db && da != 1 && db != 1)
      throw std::invalid_argument("broadcast: shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    bc.out_shape[k] = da == 1 ? db : da;
    bc.a_stride[k] = da == 1 ? 0 : sa;
    bc.b_stride[k] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  return bc;
}

}  // namespace hg::cuda
