// FP8 tensors (framework/fp8/fp8_tensor.h): the scaled cast of one value, worked by hand,
// tiles and their amax, quantize/dequantize, and what a cast loses. The cast against
// NVIDIA's own conversion, every input, is tests/fp8/fp8_vs_cuda.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

#include "framework/fp8/fp8_tensor.h"

using hg::Fp8Overflow;
using hg::Tensor;
using namespace hg::fp8;

TEST_CASE("fp8 scaled cast: values worked by hand") {
  // 1 = 2^0: E4M3 exponent field 0 + 7 = 0111, mantissa 000 -> 0x38
  CHECK(scaled_cast(1.0f, 1.0f, Format::E4M3, Fp8Overflow::Saturate) == 0x38);
  CHECK(decode(0x38, Format::E4M3) == 1.0f);
  // 100 · 4 = 400 lies half way between 384 (1.100·2^8) and 416 (1.101·2^8): ties to even, 384
  CHECK(scaled_cast(100.0f, 4.0f, Format::E4M3, Fp8Overflow::Saturate) == 0x7c);
  CHECK(decode(0x7c, Format::E4M3) == 384.0f);
  // too large: E4M3 saturates to 448 (0x7e) or, non-saturating, becomes its NaN (0x7f)
  CHECK(scaled_cast(250.0f, 2.0f, Format::E4M3, Fp8Overflow::Saturate) == 0x7e);
  CHECK(scaled_cast(250.0f, 2.0f, Format::E4M3, Fp8Overflow::NonSaturating) == 0x7f);
  CHECK(scaled_cast(-250.0f, 2.0f, Format::E4M3, Fp8Overflow::Saturate) == 0xfe);
  // E5M2: 57344 is the max (0x7b); past it, inf (0x7c) when not saturating
  CHECK(scaled_cast(70000.0f, 1.0f, Format::E5M2, Fp8Overflow::Saturate) == 0x7b);
  CHECK(scaled_cast(70000.0f, 1.0f, Format::E5M2, Fp8Overflow::NonSaturating) == 0x7c);
  // below half the smallest subnormal (E4M3: 2^-9) the value rounds to zero; a scale saves it
  CHECK(scaled_cast(0.0009f, 1.0f, Format::E4M3, Fp8Overflow::Saturate) == 0x00);
  CHECK(scaled_cast(0.0009f, 1024.0f, Format::E4M3, Fp8Overflow::Saturate) != 0x00);
  CHECK(max_value(Format::E4M3) == 448.0f);
  CHECK(max_value(Format::E5M2) == 57344.0f);
}

TEST_CASE("fp8 tiles: the grid and the amax of every tile, partial tiles at the edge") {
  // (2, 5) in 1×2 tiles: 2 rows of 3 tiles, the last one column wide
  Tensor x = Tensor::from_vector(std::vector<float>{1, -7, 3, 2, -9,  //
                                  0, 0.5f, -4, 4, 6},
                                 {2, 5});
  TileGrid g = tile_grid(2, 5, {1, 2});
  CHECK(g.grid_rows() == 2);
  CHECK(g.grid_cols() == 3);
  CHECK(g.index(1, 4) == 5);
  CHECK(tile_amax(x, {1, 2}) == std::vector<float>{7, 3, 9, 0.5f, 4, 6});
  CHECK(tile_amax(x, kPerTensor) == std::vector<float>{9});
  CHECK(tile_amax(x, {0, 2}) == std::vector<float>{7, 4, 9});  // whole columns, 2 wide
  Tensor bad = Tensor::from_vector(std::vector<float>{1, NAN, 2, 3}, {2, 2});
  CHECK(std::isnan(tile_amax(bad, kPerTensor)[0]));
}

TEST_CASE("fp8 quantize: per tile scales, dequantize within half a step of E4M3") {
  Tensor x = Tensor::from_vector(std::vector<float>{1, -7, 3, 2, 100, -300, 0.25f, 50}, {2, 4});
  const std::vector<float> amax = tile_amax(x, kTile1x128);
  REQUIRE(amax == std::vector<float>{7, 300});
  std::vector<float> scales{448.0f / 7, 448.0f / 300};
  Fp8Tensor q = quantize(x, Format::E4M3, kTile1x128, scales);
  CHECK(q.scale_inv[0] == doctest::Approx(7.0 / 448));
  // the amax of each tile maps onto 448 exactly (448/7 · 7 rounds to 448 in F32)
  CHECK(decode(q.codes[1], Format::E4M3) == -448.0f);
  std::vector<float> back = q.dequantize().to_vector(), orig = x.to_vector();
  for (size_t i = 0; i < orig.size(); ++i) {
    INFO("element ", i, ": ", orig[i], " came back as ", back[i]);
    CHECK(std::fabs(back[i] - orig[i]) <= std::fabs(orig[i]) * 0.0625f);  // 2^-4: half of E4M3's 2^-3
  }
}

TEST_CASE("fp8 quantize: bad scales and shapes are refused with a message") {
  Tensor x = Tensor::ones({2, 4});
  CHECK_THROWS_WITH_AS(quantize(x, Format::E4M3, kTile1x128, {1.0f}), doctest::Contains("which needs 2"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(quantize(x, Format::E4M3, kPerTensor, {0.0f}), doctest::Contains("finite and > 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(quantize(x, Format::E4M3, kPerTensor, {INFINITY}), doctest::Contains("finite and > 0"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(quantize(Tensor::ones({8}), Format::E4M3, kPerTensor, {1.0f}),
                       doctest::Contains("2-D tensor"), std::invalid_argument);
}

TEST_CASE("fp8 cast stats: underflow and saturation counted") {
  // one scale for both: 1000 · 0.448 = 448 fits; 0.001 · 0.448 ≈ 0.00045 is below 2^-10, half
  // of E4M3's smallest subnormal, and becomes 0
  Tensor x = Tensor::from_vector(std::vector<float>{1000, 0.001f, 0, -2000}, {1, 4});
  Fp8Tensor q = quantize(x, Format::E4M3, kPerTensor, {0.448f});
  CastStats s = cast_stats(x, q);
  CHECK(s.nonzero == 3);
  CHECK(s.underflow == 1);
  CHECK(s.saturated == 1);  // -2000 · 0.448 = -896: clamped to -448
  CHECK(decode(q.codes[3], Format::E4M3) == -448.0f);

  // ±inf is above the max too: the saturating cast clamps it to ±448, and it counts. NaN
  // stays NaN and is neither.
  Tensor y = Tensor::from_vector(std::vector<float>{INFINITY, -INFINITY, NAN, 1}, {1, 4});
  Fp8Tensor qy = quantize(y, Format::E4M3, kPerTensor, {1.0f});
  CHECK(decode(qy.codes[0], Format::E4M3) == 448.0f);
  CHECK(decode(qy.codes[1], Format::E4M3) == -448.0f);
  CHECK(cast_stats(y, qy).saturated == 2);
  CHECK(cast_stats(y, qy).nonzero == 1);
}
