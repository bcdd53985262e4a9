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

// Element loaders: how a contiguous run of stored elements becomes floats. F16 and BF16 use
// framework/dtype's conversions (exact when widening; F16 uses the CPU's F16C when present).
struct LoadF32 {
  static void run(const float* src, float* dst, int64_t n) { std::memcpy(dst, src, size_t(n) * 4); }
};
struct LoadF16 {
  static void run(const uint16_t* src, float* dst, int64_t n) { half_bits_to_float_n(src, dst, size_t(n)); }
};
struct LoadBF16 {
  static void run(const uint16_t* src, float* dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_bits_to_float(src[i]);
  }
};

// Longest contiguous run a pack routine converts at once (a stack buffer): KC and MR, NR
// are all below it; longer runs are done in pieces.
constexpr int64_t kPackRun = 1024;

// Pack the (mc, kc) block of op(A) starting at (i0, p0) into ceil(mc/MR) slivers,
// each (kc, MR) k-major:  out[s·kc·MR + k·MR + r] = op(A)(i0 + s·MR + r, p0 + k), 0 past mc.
template <class Load, class T>
void pack_a(const MatrixView<T>& A, int64_t i0, int64_t p0, int64_t mc, int64_t kc, int mr, float* out) {
  float run[kPackRun];
  for (int64_t s = 0; s < mc; s += mr, out += kc * mr) {
    const int rows = int(mc - s < mr ? mc - s : mr);
    if (A.trans) {  // op(A) row i is a column of the stored A: r is the contiguous index
      for (int64_t k = 0; k < kc; ++k) {
        Load::run(A.at(i0 + s, p0 + k), out + k * mr, rows);
        for (int r = rows; r < mr; ++r) out[k * mr + r] = 0.f;
      }
    } else {        // k is the contiguous index: convert a piece of a row, write it with stride mr
      for (int r = 0; r < rows; ++r)
        for (int64_t k0 = 0; k0 < kc; k0 += kPackRun) {
          const int64_t n = kc - k0 < kPackRun ? kc - k0 : kPackRun;
          Load::run(A.at(i0 + s + r, p0 + k0), run, n);
          for (int64_t k = 0; k < n; ++k) out[(k0 + k) * mr + r] = run[k];
        }
      for (int r = rows; r < mr; ++r)
        for (int64_t k = 0; k < kc; ++k) out[k * mr + r] = 0.f;
    }
  }
}

// Pack the (kc, nc) block of op(B) starting at (p0, j0) into ceil(nc/NR) slivers,
// each (kc, NR) k-major:  out[s·kc·NR + k·NR + c] = op(B)(p0 + k, j0 + s·NR + c), 0 past nc.
template <class Load, class T>
void pack_b(const MatrixView<T>& B, int64_t p0, int64_t j0, int64_t kc, int64_t nc, int nr, float* out) {
  float run[kPackRun];
  for (int64_t s = 0; s < nc; s += nr, out += kc * nr) {
    const int cols = int(nc - s < nr ? nc - s : nr);
    if (!B.trans) {  // a row of B: c is the contiguous index
      for (int64_t k = 0; k < kc; ++k) {
        Load::run(B.at(p0 + k, j0 + s), out + k * nr, cols);
        for (int c = cols; c < nr; ++c) out[k * nr + c] = 0.f;
      }
    } else {         // B stored (N, K): k is the contiguous index
      for (int c = 0; c < cols; ++c)
        for (int64_t k0 = 0; k0 < kc; k0 += kPackRun) {
          const int64_t n = kc - k0 < kPackRun ? kc - k0 : kPackRun;
          Load::run(B.at(p0 + k0, j0 + s + c), run, n);
          for (int64_t k = 0; k < n; ++k) out[(k0 + k) * nr + c] = run[k];
        }
      for (int c = cols; c < nr; ++c)
        for (int64_t k = 0; k < kc; ++k) out[k * nr + c] = 0.f;
    }
  }
}

}  // namespace hg::cpu
