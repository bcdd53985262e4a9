#pragma once
// framework/cpu/gemm_pack.h — packing: copy a block of op(A) or op(B) into the order the
// micro-kernel reads it (gemm_kernel.h), widening 16-bit operands to FP32 on the way.
//
// Why copy at all? The micro-kernel then reads both operands strictly sequentially, from
// 64-byte-aligned memory, whatever the transpose flags and leading dimensions were — one
// kernel serves all four transpose cases. Edges are padded with zeros to a full MR or NR, so
// the kernel never needs a bounds check. The copy costs O(mc·kc) and is reused for
// mc·kc·nc multiply-adds.
//
// Packing is also where F16 and BF16 become FP32 (exactly: every half and every bfloat16 is
// a float), so gemm_f16/gemm_bf16 reuse the FP32 kernels unchanged and every product in
// them is exact. They pack one sliver at a time in two steps:
//   1. widen the sliver's stored block (kc × MR or NR values) into a small FP32 scratch —
//      in bulk, 8 values per instruction (widen.h), and small enough to stay in L1;
//   2. pack the scratch with the very FP32 code sgemm uses (8×8 register transposes
//      included).
// So gemm_f16(A, B) gives, bit for bit, sgemm(float(A), float(B)): same packed panels, same
// kernel, same order of additions (tests/unit/test_gemm_cpu_f16.cpp checks it).
#include <cstdint>
#include <type_traits>
#include <vector>

#include "framework/cpu/gemm_kernel.h"
#include "framework/cpu/widen.h"

namespace hg::cpu {

// op(X) of a row-major matrix: element (r, c) of X, or of Xᵀ when trans is set.
template <class T>
struct MatrixView {
  const T* data;
  int64_t ld;
  bool trans;
  const T* at(int64_t r, int64_t c) const { return trans ? data + c * ld + r : data + r * ld + c; }
};

// Element types: how a run of n stored values becomes floats.
struct LoadF32 {  // nothing to widen: FP32 operands are packed straight from A and B
  using Stored = float;
};
struct LoadF16 {
  using Stored = uint16_t;  // IEEE binary16 bits
  static void widen(const uint16_t* src, int64_t n, float* dst) { widen_f16(src, n, dst); }
};
struct LoadBF16 {
  using Stored = uint16_t;  // bfloat16 bits
  static void widen(const uint16_t* src, int64_t n, float* dst) { widen_bf16(src, n, dst); }
};

// ---- FP32 packing -----------------------------------------------------------------------

// The transposing case of both packs: a band of `rows` stored rows (row stride ld) becomes
// (kc, width) k-major:  out[k·width + r] = src[r·ld + k], zero for rows ≤ r < width.
// With full bands and a SIMD helper (gemm_kernel.h), 8×8 blocks go through registers; the
// rest goes one float at a time.
inline void pack_transposed(const float* src, int64_t ld, int rows, int64_t kc, int width,
                            Transpose8Fn transpose8, float* out) {
  int64_t k0 = 0;
  if (transpose8 && rows == width && width % 8 == 0) {
    k0 = kc / 8 * 8;
    for (int r = 0; r < rows; r += 8) transpose8(src + r * ld, ld, k0, out + r, width);
  }
  for (int64_t k = k0; k < kc; ++k) {
    for (int r = 0; r < rows; ++r) out[k * width + r] = src[r * ld + k];
    for (int r = rows; r < width; ++r) out[k * width + r] = 0.f;
  }
}

// The copying case: kc rows of `cols` contiguous values (row stride ld) -> (kc, width).
inline void pack_copied(const float* src, int64_t ld, int cols, int64_t kc, int width, float* out) {
  for (int64_t k = 0; k < kc; ++k, out += width, src += ld) {
    for (int c = 0; c < cols; ++c) out[c] = src[c];
    for (int c = cols; c < width; ++c) out[c] = 0.f;
  }
}

// ---- 16-bit operands: widen one sliver's stored block into a scratch ---------------------

// This thread's scratch for one widened sliver, kept between calls (at most kc × 32 floats).
inline float* widen_scratch(int64_t n) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < size_t(n)) scratch.resize(size_t(n));
  return scratch.data();
}

// The stored block of `rows` rows × `cols` contiguous values at src (row stride ld), widened
// into a fresh (rows, cols) FP32 block; returns it.
template <class Load>
const float* widen_block(const uint16_t* src, int64_t ld, int64_t rows, int64_t cols) {
  float* out = widen_scratch(rows * cols);
  for (int64_t r = 0; r < rows; ++r) Load::widen(src + r * ld, cols, out + r * cols);
  return out;
}

// ---- the two packs ------------------------------------------------------------------------

// Pack the (mc, kc) block of op(A) starting at (i0, p0) into ceil(mc/MR) slivers,
// each (kc, MR) k-major:  out[s·kc·MR + k·MR + r] = op(A)(i0 + s·MR + r, p0 + k), 0 past mc.
// A stored (M, K) must be transposed into this order; A stored (K, M) (trans_a) is copied.
template <class Load>
void pack_a(const MatrixView<typename Load::Stored>& A, int64_t i0, int64_t p0, int64_t mc,
            int64_t kc, int mr, Transpose8Fn transpose8, float* out) {
  for (int64_t s = 0; s < mc; s += mr, out += kc * mr) {
    const int rows = int(mc - s < mr ? mc - s : mr);
    if constexpr (std::is_same_v<Load, LoadF32>) {
      if (A.trans) pack_copied(A.at(i0 + s, p0), A.ld, rows, kc, mr, out);
      else pack_transposed(A.at(i0 + s, p0), A.ld, rows, kc, mr, transpose8, out);
    } else {  // the sliver is stored (kc, rows) if A.trans, else (rows, kc): widen, then pack
      const int64_t stored_rows = A.trans ? kc : rows, stored_cols = A.trans ? rows : kc;
      const float* w = widen_block<Load>(A.at(i0 + s, p0), A.ld, stored_rows, stored_cols);
      pack_a<LoadF32>(MatrixView<float>{w, stored_cols, A.trans}, 0, 0, rows, kc, mr, transpose8, out);
    }
  }
}

// Pack the (kc, nc) block of op(B) starting at (p0, j0) into ceil(nc/NR) slivers,
// each (kc, NR) k-major:  out[s·kc·NR + k·NR + c] = op(B)(p0 + k, j0 + s·NR + c), 0 past nc.
// B stored (K, N) is copied row by row; B stored (N, K) (trans_b) is transposed.
template <class Load>
void pack_b(const MatrixView<typename Load::Stored>& B, int64_t p0, int64_t j0, int64_t kc,
            int64_t nc, int nr, Transpose8Fn transpose8, float* out) {
  for (int64_t s = 0; s < nc; s += nr, out += kc * nr) {
    const int cols = int(nc - s < nr ? nc - s : nr);
    if constexpr (std::is_same_v<Load, LoadF32>) {
      if (B.trans) pack_transposed(B.at(p0, j0 + s), B.ld, cols, kc, nr, transpose8, out);
      else pack_copied(B.at(p0, j0 + s), B.ld, cols, kc, nr, out);
    } else {  // the sliver is stored (cols, kc) if B.trans, else (kc, cols): widen, then pack
      const int64_t stored_rows = B.trans ? cols : kc, stored_cols = B.trans ? kc : cols;
      const float* w = widen_block<Load>(B.at(p0, j0 + s), B.ld, stored_rows, stored_cols);
      pack_b<LoadF32>(MatrixView<float>{w, stored_cols, B.trans}, 0, 0, kc, cols, nr, transpose8, out);
    }
  }
}

}  // namespace hg::cpu
