#include "framework/cpu/copy.h"

#include <cstring>

namespace hg::cpu {

static constexpr int64_t kParallelMin = 1 << 15;  // below this, threads cost more than they save

void copy_to_contiguous(const TensorImpl& src, void* dst) {
  const int64_t n = shape_numel(src.shape);
  const size_t es = dtype_size(src.dtype);
  const char* base = static_cast<const char*>(src.storage->data) + src.offset * es;
  char* out = static_cast<char*>(dst);
  const int64_t nd = static_cast<int64_t>(src.shape.size());
  if (nd == 0) {
    std::memcpy(out, base, es);
    return;
  }
  // Walk the output in row-major order; the innermost dimension is a strided run.
  const int64_t inner = src.shape[nd - 1];
  const int64_t inner_stride = src.strides[nd - 1];
  const int64_t rows = inner == 0 ? 0 : n / inner;
#pragma omp parallel for if (n > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    // offset of row r: decompose r over the outer dimensions
    int64_t rem = r, off = 0;
    for (int64_t d = nd - 2; d >= 0; --d) {
      off += (rem % src.shape[d]) * src.strides[d];
      rem /= src.shape[d];
    }
    char* o = out + r * inner * es;
    if (inner_stride == 1) {
      std::memcpy(o, base + off * es, inner * es);
    } else {
      for (int64_t i = 0; i < inner; ++i)
        std::memcpy(o + i * es, base + (off + i * inner_stride) * es, es);
    }
  }
}

void convert(const void* src, DType from, void* dst, DType to, int64_t n) {
  if (from == to) {
    std::memcpy(dst, src, n * dtype_size(from));
    return;
  }
  visit_dtype(from, [&](auto src_tag) {
    using S = decltype(src_tag);
    visit_dtype(to, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(dst);
      // Through double when either side is F64 (exact), else through float: F16/BF16 -> F32
      // is exact, and F32 -> F16/BF16 rounds once, to nearest even.
      using Via = std::conditional_t<std::is_same_v<S, double> || std::is_same_v<D, double>,
                                     double, float>;
#pragma omp parallel for if (n > kParallelMin)
      for (int64_t i = 0; i < n; ++i)
        d[i] = static_cast<D>(static_cast<Via>(static_cast<compute_t<S>>(s[i])));
    });
  });
}

void fill(void* dst, DType t, int64_t n, double value) {
  visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    // Round once: double -> float -> storage for F16/BF16 could double-round, so F16/BF16
    // round from float of the value; constants here (0, 1, small counts) are exact anyway.
    T v = static_cast<T>(static_cast<compute_t<T>>(value));
    T* d = static_cast<T*>(dst);
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) d[i] = v;
  });
}

}  // namespace hg::cpu
