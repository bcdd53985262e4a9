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
// a float), so gemm_f16/gemm_bf16 reuse the FP32 kernels unchanged.
#include <cstdint>
#include <cstring>

namespace hg::cpu {

// op(X) of a row-major matrix: element (r, c) of X, or of Xᵀ when trans is set.
template <class T>
struct MatrixView {
  const T* data;
  int64_t ld;
  bool trans;
  const T* at(int64_t r, int64_t c) const { return trans ? data + c * ld + r : data + r * ld + c; }
};

// Element loaders: how a stored element becomes a float.
struct LoadF32 {
  static float load(float x) { return x; }
};
struct LoadF16 {  // IEEE binary16 bits -> binary32, exact
  static float load(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0x1f) {
      bits = sign | 0x7f800000u | (man << 13);          // inf, NaN (payload kept)
    } else if (exp != 0) {
      bits = sign | ((exp + 112) << 23) | (man << 13);  // normal: rebias 15 -> 127
    } else if (man == 0) {
      bits = sign;                                      // ±0
    } else {                                            // subnormal man·2^-24: normalise
      int shift = 0;
      while ((man & 0x400u) == 0) { man <<= 1; ++shift; }
      bits = sign | (uint32_t(113 - shift) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
};
struct LoadBF16 {  // bfloat16 is the upper half of a binary32
  static float load(uint16_t h) {
    const uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
};

// Pack the (mc, kc) block of op(A) starting at (i0, p0) into ceil(mc/MR) slivers,
// each (kc, MR) k-major:  out[s·kc·MR + k·MR + r] = op(A)(i0 + s·MR + r, p0 + k), 0 past mc.
template <class Load, class T>
void pack_a(const MatrixView<T>& A, int64_t i0, int64_t p0, int64_t mc, int64_t kc, int mr, float* out) {
  for (int64_t s = 0; s < mc; s += mr, out += kc * mr) {
    const int rows = int(mc - s < mr ? mc - s : mr);
    if (A.trans) {  // op(A) row i is a column of the stored A: r is the contiguous index
      for (int64_t k = 0; k < kc; ++k) {
        const T* src = A.at(i0 + s, p0 + k);
        for (int r = 0; r < rows; ++r) out[k * mr + r] = Load::load(src[r]);
        for (int r = rows; r < mr; ++r) out[k * mr + r] = 0.f;
      }
    } else {        // k is the contiguous index: walk each row, write with stride mr
      for (int r = 0; r < rows; ++r) {
        const T* src = A.at(i0 + s + r, p0);
        for (int64_t k = 0; k < kc; ++k) out[k * mr + r] = Load::load(src[k]);
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
  for (int64_t s = 0; s < nc; s += nr, out += kc * nr) {
    const int cols = int(nc - s < nr ? nc - s : nr);
    if (!B.trans) {  // a row of B: c is the contiguous index
      for (int64_t k = 0; k < kc; ++k) {
        const T* src = B.at(p0 + k, j0 + s);
        for (int c = 0; c < cols; ++c) out[k * nr + c] = Load::load(src[c]);
        for (int c = cols; c < nr; ++c) out[k * nr + c] = 0.f;
      }
    } else {         // B stored (N, K): k is the contiguous index
      for (int c = 0; c < cols; ++c) {
        const T* src = B.at(p0, j0 + s + c);
        for (int64_t k = 0; k < kc; ++k) out[k * nr + c] = Load::load(src[k]);
      }
      for (int c = cols; c < nr; ++c)
        for (int64_t k = 0; k < kc; ++k) out[k * nr + c] = 0.f;
    }
  }
}

}  // namespace hg::cpu
