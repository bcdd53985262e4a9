#pragma once
// FP8 tensors: 8-bit codes, and the scales that say what the codes are worth.
//
// FP8's range is narrow (E4M3: 2^-9 .. 448, E5M2: 2^-16 .. 57344), so a tensor is never cast
// to FP8 as it is: it is first multiplied by a scale chosen so that its largest magnitude
// (its amax) lands near the top of the format, and the scale travels with the codes:
//
//   quantize     code = round_fp8(x · scale)        nearest, ties to even; saturating or not
//   dequantize   x'   = decode(code) · scale_inv    scale_inv = 1 / scale
//
// This is NVIDIA Transformer Engine's convention (scale multiplies on the way in, scale_inv
// on the way out: a GEMM multiplies its F32 result by scale_inv_a · scale_inv_b). DeepSeek-V3
// and OCP Microscaling write the same cast as x / s with s = scale_inv.
//
// Where a scale applies: one scale for the whole tensor, or one per tile of a 2-D tensor
// (framework/fp8/scaling.h chooses them):
//   Tile{0, 0}      per tensor          (current and delayed scaling)
//   Tile{1, 128}    1×128 row tiles     (DeepSeek-V3's activations and gradients)
//   Tile{128, 128}  128×128 blocks      (DeepSeek-V3's weights)
//   Tile{1, 32}     MX blocks of 32     (OCP Microscaling; scales are powers of two)
// The last tile of a row or column may be partial.
//
// Why a wrapper and not a Tensor dtype: an FP8 code means nothing without its scales, and
// the only op that reads FP8 is the GEMM (framework/fp8/fp8_gemm.h), which takes this type.
// Tensor dtypes stay F32, F16, BF16, F64 (DESIGN.md); a Tensor goes in, a Tensor comes out.
//
// Legend: R rows, C columns (a GEMM operand is (M, K) or (N, K): C is the summed K).
#include <cstdint>
#include <vector>

#include "framework/dtype/fp8.h"
#include "framework/tensor/tensor.h"

namespace hg::fp8 {

// ---- 1. the two formats and the scaled cast of one value ------------------------------------
enum class Format { E4M3, E5M2 };

inline const FloatFormat& float_format(Format f) { return f == Format::E4M3 ? kE4M3 : kE5M2; }
inline const char* format_name(Format f) { return f == Format::E4M3 ? "E4M3" : "E5M2"; }
// The largest finite value: 448 (E4M3), 57344 (E5M2).
inline float max_value(Format f) { return float(float_format(f).max_finite()); }

inline uint8_t encode(float x, Format f, Fp8Overflow overflow) {
  return f == Format::E4M3 ? float_to_e4m3(x, overflow) : float_to_e5m2(x, overflow);
}
inline float decode(uint8_t code, Format f) {
  return f == Format::E4M3 ? e4m3_to_float(code) : e5m2_to_float(code);
}

// The scaled cast: x · scale in F32 (one rounding, as the GPU's cast kernel does), then the
// rounding to FP8. Saturate clamps what is too large to ±max; NonSaturating gives inf
// (E5M2) or NaN (E4M3, which has no inf).
inline uint8_t scaled_cast(float x, float scale, Format f, Fp8Overflow overflow) {
  return encode(x * scale, f, overflow);
}

// ---- 2. a tensor of codes ----------------------------------------------------------------------
struct Tile {
  int64_t rows = 0, cols = 0;  // 0: the whole dimension
};
inline constexpr Tile kPerTensor{0, 0};
inline constexpr Tile kTile1x128{1, 128};
inline constexpr Tile kBlock128x128{128, 128};
inline constexpr Tile kMxBlock32{1, 32};

// The grid of tiles over an (R, C) tensor: tile (i, j) covers rows [i·rows, (i+1)·rows) and
// columns [j·cols, (j+1)·cols), cut at the tensor's edge.
struct TileGrid {
  int64_t R = 0, C = 0;        // the tensor
  int64_t rows = 0, cols = 0;  // one tile (a whole-dimension tile resolved to R or C)
  int64_t grid_rows() const { return (R + rows - 1) / rows; }
  int64_t grid_cols() const { return (C + cols - 1) / cols; }
  int64_t count() const { return grid_rows() * grid_cols(); }
  int64_t index(int64_t r, int64_t c) const { return (r / rows) * grid_cols() + c / cols; }
};
TileGrid tile_grid(int64_t R, int64_t C, Tile tile);

struct Fp8Tensor {
  Format format = Format::E4M3;
  TileGrid grid;                 // (R, C) and its tiles
  std::vector<uint8_t> codes;    // (R, C) row-major
  std::vector<float> scale;      // (grid_rows, grid_cols): the multiplier used to quantize
  std::vector<float> scale_inv;  // (grid_rows, grid_cols): 1 / scale, to dequantize

  int64_t rows() const { return grid.R; }
  int64_t cols() const { return grid.C; }
  float value(int64_t r, int64_t c) const {  // decode(code) · scale_inv of its tile
    return decode(codes[size_t(r * grid.C + c)], format) * scale_inv[size_t(grid.index(r, c))];
  }
  Tensor dequantize() const;  // (R, C) F32
};

// amax (largest |x|) of every tile of a 2-D F32 tensor: (grid_rows, grid_cols). NaN in a tile
// gives NaN for that tile (so a caller can see it), inf gives inf.
std::vector<float> tile_amax(const Tensor& x, Tile tile);

// Quantize a 2-D F32 tensor (R, C) with one scale per tile (`scales` has grid.count()
// entries, each finite and > 0). Throws std::invalid_argument naming what is wrong.
Fp8Tensor quantize(const Tensor& x, Format f, Tile tile, const std::vector<float>& scales,
                   Fp8Overflow overflow = Fp8Overflow::Saturate);

// Counts for the run log and the outlier demonstration: how much of x the cast lost.
struct CastStats {
  int64_t nonzero = 0;    // finite non-zero inputs
  int64_t underflow = 0;  // ... of which became ±0 in FP8
  int64_t saturated = 0;  // inputs whose |x · scale| was above the format's max, ±inf included
                          // (a saturating cast clamps them to ±max); NaN is not counted
};
CastStats cast_stats(const Tensor& x, const Fp8Tensor& q);

}  // namespace hg::fp8
