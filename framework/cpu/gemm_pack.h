#pragma once
// framework/cpu/gemm_pack.h — packing: copy a block of op(A) or op(B) into the order the
// micro-kernel reads it (gemm_kernel.h), converting the element type on the way.
//
// Why copy at all? The micro-kernel then reads both operands strictly sequentially, from
// 64-byte-aligned memory, whatever the transpose flags and leading dimensions were — one
// kernel serves all four transpose cases. Edges are padded with zeros to a full MR or NR, so
// the kernel never needs a bounds check. The copy costs O(mc·kc) and is reused for
// mc·kc·nc multiply-adds.
//
// Packing is also where F16 and BF16 become FP32 (exactly: every half and every bfloat16 is
// a float), so gemm_f16/gemm_bf16 reuse the FP32 kernels unchanged and every product in
// them is exact.
#include <cstdint>
#include <cstring>

#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"

namespace hg::cpu {

// op(X) of a row-major matrix: element (r, c) of X, or of Xᵀ when trans is set.
template <class T>
struct MatrixView {
  const T* data;
  int64_t ld;
  bool trans;
  const T* at(int64_t r, int64_t c) const { return trans ? data + c * ld + r : data + r * ld + c; }
};

// Element loaders: how one stored element becomes a float. F16 and BF16 use framework/dtype's
// conversions (widening is exact).
struct LoadF32 {
  static float one(float x) { return x; }
};
struct LoadF16 {
  static float one(uint16_t h) { return half_bits_to_float(h); }
};
struct LoadBF16 {
  static float one(uint16_t b) { return bf16_bits_to_float(b); }
};

// Pack the (mc, kc) block of op(A) starting at (i0, p0) into ceil(mc/MR) slivers,
// each (kc, MR) k-major:  out[s·kc·MR + k·MR + r] = op(A)(i0 + s·MR + r, p0 + k), 0 past mc.
// The writes are sequential; the reads walk MR rows (or one row, with trans) side by side.
template <class Load, class T>
void pack_a(const MatrixView<T>& A, int64_t i0, int64_t p0, int64_t mc, int64_t kc, int mr, float* out) {
  const T* row[32];  // where each of the sliver's rows starts; stored stride between k steps
  for (int64_t s = 0; s < mc; s += mr) {
    const int rows = int(mc - s < mr ? mc - s : mr);
    for (int r = 0; r < rows; ++r) row[r] = A.at(i0 + s + r, p0);
    const int64_t step = A.trans ? A.ld : 1;  // from op(A)(i, p) to op(A)(i, p + 1)
    for (int64_t k = 0; k < kc; ++k, out += mr) {
      for (int r = 0; r < rows; ++r) out[r] = Load::one(row[r][k * step]);
      for (int r = rows; r < mr; ++r) out[r] = 0.f;
    }
  }
}

// Pack the (kc, nc) block of op(B) starting at (p0, j0) into ceil(nc/NR) slivers,
// each (kc, NR) k-major:  out[s·kc·NR + k·NR + c] = op(B)(p0 + k, j0 + s·NR + c), 0 past nc.
template <class Load, class T>
void pack_b(const MatrixView<T>& B, int64_t p0, int64_t j0, int64_t kc, int64_t nc, int nr, float* out) {
  const T* col[32];
  for (int64_t s = 0; s < nc; s += nr) {
    const int cols = int(nc - s < nr ? nc - s : nr);
    for (int c = 0; c < cols; ++c) col[c] = B.at(p0, j0 + s + c);
    const int64_t step = B.trans ? 1 : B.ld;  // from op(B)(p, j) to op(B)(p + 1, j)
    for (int64_t k = 0; k < kc; ++k, out += nr) {
      if (!B.trans) {  // a row of B: the cols values are contiguous
        const T* src = col[0] + k * step;
        for (int c = 0; c < cols; ++c) out[c] = Load::one(src[c]);
      } else {
        for (int c = 0; c < cols; ++c) out[c] = Load::one(col[c][k]);
      }
      for (int c = cols; c < nr; ++c) out[c] = 0.f;
    }
  }
}

}  // namespace hg::cpu
