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
#include <type_traits>

#include "framework/cpu/gemm_kernel.h"

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

// The transposing case of both packs: a band of `rows` stored rows (row stride ld) becomes
// (kc, width) k-major:  out[k·width + r] = Load(src[r·ld + k]), zero for rows ≤ r < width.
// With FP32 data, full bands and a SIMD helper (gemm_kernel.h), 8×8 blocks go through
// registers; the rest goes one float at a time.
template <class Load, class T>
void pack_transposed(const T* src, int64_t ld, int rows, int64_t kc, int width,
                     Transpose8Fn transpose8, float* out) {
  int64_t k0 = 0;
  if constexpr (std::is_same_v<T, float>) {
    if (transpose8 && rows == width && width % 8 == 0) {
      k0 = kc / 8 * 8;
      for (int r = 0; r < rows; r += 8) transpose8(src + r * ld, ld, k0, out + r, width);
    }
  }
  for (int64_t k = k0; k < kc; ++k) {
    for (int r = 0; r < rows; ++r) out[k * width + r] = Load::one(src[r * ld + k]);
    for (int r = rows; r < width; ++r) out[k * width + r] = 0.f;
  }
}

// The copying case: kc rows of `cols` contiguous values (row stride ld) -> (kc, width).
template <class Load, class T>
void pack_copied(const T* src, int64_t ld, int cols, int64_t kc, int width, float* out) {
  for (int64_t k = 0; k < kc; ++k, out += width, src += ld) {
    for (int c = 0; c < cols; ++c) out[c] = Load::one(src[c]);
    for (int c = cols; c < width; ++c) out[c] = 0.f;
  }
}

// Pack the (mc, kc) block of op(A) starting at (i0, p0) into ceil(mc/MR) slivers,
// each (kc, MR) k-major:  out[s·kc·MR + k·MR + r] = op(A)(i0 + s·MR + r, p0 + k), 0 past mc.
// A stored (M, K) must be transposed into this order; A stored (K, M) (trans_a) is copied.
template <class Load, class T>
void pack_a(const MatrixView<T>& A, int64_t i0, int64_t p0, int64_t mc, int64_t kc, int mr,
            Transpose8Fn transpose8, float* out) {
  for (int64_t s = 0; s < mc; s += mr, out += kc * mr) {
    const int rows = int(mc - s < mr ? mc - s : mr);
    if (A.trans) pack_copied<Load>(A.at(i0 + s, p0), A.ld, rows, kc, mr, out);
    else pack_transposed<Load>(A.at(i0 + s, p0), A.ld, rows, kc, mr, transpose8, out);
  }
}

// Pack the (kc, nc) block of op(B) starting at (p0, j0) into ceil(nc/NR) slivers,
// each (kc, NR) k-major:  out[s·kc·NR + k·NR + c] = op(B)(p0 + k, j0 + s·NR + c), 0 past nc.
// B stored (K, N) is copied row by row; B stored (N, K) (trans_b) is transposed.
template <class Load, class T>
void pack_b(const MatrixView<T>& B, int64_t p0, int64_t j0, int64_t kc, int64_t nc, int nr,
            Transpose8Fn transpose8, float* out) {
  for (int64_t s = 0; s < nc; s += nr, out += kc * nr) {
    const int cols = int(nc - s < nr ? nc - s : nr);
    if (B.trans) pack_transposed<Load>(B.at(p0, j0 + s), B.ld, cols, kc, nr, transpose8, out);
    else pack_copied<Load>(B.at(p0, j0 + s), B.ld, cols, kc, nr, out);
  }
}

}  // namespace hg::cpu
