#pragma once
// Strided views on the GPU: y = x gathered into row-major order (the CUDA side of
// Tensor::contiguous()), and the reverse, row-major values scattered into a view (the
// backward of a view: narrow's gradient is dy written into a window of zeros).
//
// A view is (shape, strides, offset) over a storage: element (i_0 .. i_{d-1}) of the view lives
// at offset + Σ_k i_k · stride[k] in the storage. A transpose swaps two strides, an expand
// sets a stride to 0, a slice moves the offset. Copying a view into fresh row-major memory
// means: for output element i, unravel i into (i_0 .. i_{d-1}) over the shape, then read the
// storage at Σ_k i_k · stride[k]. The caller passes x already advanced by the offset.
//
//   x (2, 3) transposed to (3, 2):  shape (3, 2), strides (1, 3)
//   output i = 3 -> (1, 1) -> reads x at 1·1 + 1·3 = 4
#include "cuda/ops/dtype.h"
#include "cuda/runtime/hd.h"

#include <cstdint>
#include <stdexcept>
#include <vector>

namespace hg::cuda {

constexpr int kMaxViewDims = 8;

struct StridedView {
  int ndim = 0;
  int64_t shape[kMaxViewDims] = {};
  int64_t stride[kMaxViewDims] = {};
};

// Storage offset (in elements, from the view's first element) of row-major element i.
HG_HD int64_t strided_offset(const StridedView& v, int64_t i) {
  int64_t off = 0;
  for (int k = v.ndim - 1; k >= 0; --k) {  // the last dim moves fastest
    off += (i % v.shape[k]) * v.stride[k];
    i /= v.shape[k];
  }
  return off;
}

inline StridedView make_strided_view(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  if (shape.size() != strides.size() || shape.size() > size_t(kMaxViewDims))
    throw std::invalid_argument("make_strided_view: shape and strides must have the same length, at most 8");
  StridedView v;
  v.ndim = int(shape.size());
  for (int k = 0; k < v.ndim; ++k) {
    v.shape[k] = shape[k];
    v.stride[k] = strides[k];
  }
  return v;
}

// y (n = Π shape, row-major) = the view of x; x points at the view's first element.
void launch_copy_strided(DType dt, const void* x, const StridedView& view, void* y, int64_t n);
// The view of y = x (n = Π shape, row-major); y points at the view's first element. The view
// must not repeat an element (no stride 0): two threads would write one place.
void launch_copy_into_strided(DType dt, const void* x, void* y, const StridedView& view, int64_t n);

}  // namespace hg::cuda
