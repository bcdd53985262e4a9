#include "framework/fp8/fp8_tensor.h"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

namespace hg::fp8 {

namespace {

// The F32 values of a 2-D tensor, row-major (any dtype is widened; F32 is copied as is).
std::vector<float> matrix_values(const Tensor& x, const char* what) {
  if (!x.defined() || x.dim() != 2)
    throw std::invalid_argument(fmt::format("{}: expects a 2-D tensor (R, C), got {}", what,
                                            x.defined() ? shape_str(x.shape()) : "an undefined tensor"));
  if (x.device() != Device::CPU)
    throw std::invalid_argument(fmt::format("{}: FP8 emulation runs on the CPU; move the tensor with .to(Device::CPU)", what));
  return x.to_vector();
}

}  // namespace

TileGrid tile_grid(int64_t R, int64_t C, Tile tile) {
  if (tile.rows < 0 || tile.cols < 0)
    throw std::invalid_argument(fmt::format("FP8 tile ({}, {}): sizes must be >= 0 (0 = whole dimension)",
                                            tile.rows, tile.cols));
  TileGrid g{R, C, tile.rows == 0 ? R : tile.rows, tile.cols == 0 ? C : tile.cols};
  if (g.rows == 0) g.rows = 1;  // an empty tensor: one (empty) tile
  if (g.cols == 0) g.cols = 1;
  return g;
}

std::vector<float> tile_amax(const Tensor& x, Tile tile) {
  const std::vector<float> v = matrix_values(x, "fp8::tile_amax");
  const TileGrid g = tile_grid(x.size(0), x.size(1), tile);
  std::vector<float> amax(size_t(g.count()), 0.0f);
  for (int64_t r = 0; r < g.R; ++r)
    for (int64_t c = 0; c < g.C; ++c) {
      const float a = std::fabs(v[size_t(r * g.C + c)]);
      float& m = amax[size_t(g.index(r, c))];
      if (std::isnan(a) || a > m) m = std::isnan(m) ? m : a;  // NaN sticks
    }
  return amax;
}

Fp8Tensor quantize(const Tensor& x, Format f, Tile tile, const std::vector<float>& scales,
                   Fp8Overflow overflow) {
  const std::vector<float> v = matrix_values(x, "fp8::quantize");
  Fp8Tensor q;
  q.format = f;
  q.grid = tile_grid(x.size(0), x.size(1), tile);
  if (int64_t(scales.size()) != q.grid.count())
    throw std::invalid_argument(fmt::format(
        "fp8::quantize: {} scales for a {}x{} tensor in {}x{} tiles, which needs {}", scales.size(), q.grid.R,
        q.grid.C, q.grid.rows, q.grid.cols, q.grid.count()));
  for (float s : scales)
    if (!(s > 0) || !std::isfinite(s))
      throw std::invalid_argument(fmt::format("fp8::quantize: every scale must be finite and > 0, got {}", s));
  q.scale = scales;
  q.scale_inv.resize(scales.size());
  for (size_t i = 0; i < scales.size(); ++i) q.scale_inv[i] = 1.0f / scales[i];
  q.codes.resize(v.size());
#pragma omp parallel for if (v.size() > (size_t(1) << 16))
  for (int64_t r = 0; r < q.grid.R; ++r)
    for (int64_t c = 0; c < q.grid.C; ++c) {
      const size_t i = size_t(r * q.grid.C + c);
      q.codes[i] = scaled_cast(v[i], q.scale[size_t(q.grid.index(r, c))], f, overflow);
    }
  return q;
}

Tensor Fp8Tensor::dequantize() const {
  Tensor out = Tensor::empty({grid.R, grid.C});
  float* o = out.data<float>();
  for (int64_t r = 0; r < grid.R; ++r)
    for (int64_t c = 0; c < grid.C; ++c) o[r * grid.C + c] = value(r, c);
  return out;
}

CastStats cast_stats(const Tensor& x, const Fp8Tensor& q) {
  const std::vector<float> v = matrix_values(x, "fp8::cast_stats");
  if (int64_t(v.size()) != q.grid.R * q.grid.C)
    throw std::invalid_argument("fp8::cast_stats: the tensor and its FP8 copy differ in size");
  CastStats s;
  const float max = max_value(q.format);
  for (int64_t r = 0; r < q.grid.R; ++r)
    for (int64_t c = 0; c < q.grid.C; ++c) {
      const size_t i = size_t(r * q.grid.C + c);
      if (std::isnan(v[i])) continue;
      // ±inf too: a saturating cast clamps it to ±max like any value past the max
      if (std::fabs(v[i] * q.scale[size_t(q.grid.index(r, c))]) > max) ++s.saturated;
      if (std::isinf(v[i]) || v[i] == 0) continue;
      ++s.nonzero;
      if (decode(q.codes[i], q.format) == 0) ++s.underflow;
    }
  return s;
}

}  // namespace hg::fp8
