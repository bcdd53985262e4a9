// The FP8 scaling recipes (framework/fp8/scaling.h), each against numbers worked by hand.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <stdexcept>

#include "framework/fp8/scaling.h"

using hg::Tensor;
using namespace hg::fp8;

TEST_CASE("fp8 scale rule: fp8_max · 2^-margin / amax, the previous scale when amax is 0 or not finite") {
  CHECK(scale_from_amax(4.0f, Format::E4M3, 0, 1.0f) == 112.0f);  // 448 / 4
  CHECK(scale_from_amax(4.0f, Format::E4M3, 1, 1.0f) == 56.0f);   // one binade of headroom
  CHECK(scale_from_amax(7.0f, Format::E5M2, 0, 1.0f) == 8192.0f); // 57344 / 7
  CHECK(scale_from_amax(0.0f, Format::E4M3, 0, 3.0f) == 3.0f);
  CHECK(scale_from_amax(NAN, Format::E4M3, 0, 3.0f) == 3.0f);
  CHECK(scale_from_amax(INFINITY, Format::E4M3, 0, 3.0f) == 3.0f);
}

TEST_CASE("fp8 scale rule: a scale past F32's range is FLT_MAX, as in Transformer Engine's recipes") {
  // 448 / 1.4e-45 (F32's smallest subnormal) and 57344 / 1e-38 are inf in F32: the scale
  // becomes FLT_MAX, margin or not, and every recipe's tensor still quantizes.
  const float tiny = 0x1p-149f;
  CHECK(scale_from_amax(tiny, Format::E4M3, 0, 1.0f) == FLT_MAX);
  CHECK(scale_from_amax(tiny, Format::E4M3, 3, 1.0f) == FLT_MAX);
  CHECK(scale_from_amax(1e-38f, Format::E5M2, 0, 1.0f) == FLT_MAX);
  CHECK(scale_from_amax(1e-30f, Format::E4M3, 0, 1.0f) == 448.0f / 1e-30f);  // finite: the rule as it is

  const Tensor subnormals = Tensor::from_vector(std::vector<float>{tiny, -2 * tiny, 0, tiny}, {2, 2});
  CHECK(current_scale(subnormals, Format::E4M3) == FLT_MAX);
  DelayedScaling d(Format::E5M2, 4, 0);
  d.update(tiny);
  CHECK(d.scale() == FLT_MAX);
  std::vector<float> v(256, 1.0f);  // (1, 256): a tile of subnormals, then a tile of ones
  for (int c = 0; c < 128; ++c) v[size_t(c)] = tiny;
  const Tensor tiles = Tensor::from_vector(v, {1, 256});
  CHECK(block_scales(tiles, kTile1x128, Format::E4M3) == std::vector<float>{FLT_MAX, 448.0f});

  // quantize takes them: the subnormals round to 0 (1.4e-45 · FLT_MAX = 4.8e-7), and values
  // of 1e-38 keep E4M3's precision (1e-38 · FLT_MAX = 3.4, stored as 3.5).
  CHECK_NOTHROW(quantize(subnormals, Format::E4M3, kPerTensor, {current_scale(subnormals, Format::E4M3)}));
  CHECK_NOTHROW(quantize(tiles, Format::E4M3, kTile1x128, block_scales(tiles, kTile1x128, Format::E4M3)));
  const Tensor small = Tensor::from_vector(std::vector<float>{1e-38f, -5e-39f}, {1, 2});
  const Fp8Tensor q = quantize(small, Format::E4M3, kPerTensor, {current_scale(small, Format::E4M3)});
  CHECK(q.scale[0] == FLT_MAX);
  CHECK(q.value(0, 0) == doctest::Approx(1e-38).epsilon(1.0 / 16));
  CHECK(q.value(0, 1) == doctest::Approx(-5e-39).epsilon(1.0 / 16));
}

TEST_CASE("fp8 current scaling: the amax of the tensor now") {
  CHECK(current_scale(Tensor::from_vector(std::vector<float>{0.5f, -2.0f, 1.0f, 0.0f}, {2, 2}), Format::E4M3) == 224.0f);
  CHECK(current_scale(Tensor::from_vector(std::vector<float>{0.5f, -2.0f, 1.0f, 0.0f}, {2, 2}), Format::E4M3, 2) == 56.0f);
  CHECK(current_scale(Tensor::zeros({2, 2}), Format::E4M3) == 1.0f);
}

TEST_CASE("fp8 delayed scaling: history of 3, a step at a time") {
  DelayedScaling d(Format::E4M3, 3, 0);
  CHECK(d.scale() == 1.0f);      // before any amax
  d.update(2);                   // history [2]            max 2   -> 448/2
  CHECK(d.scale() == 224.0f);
  d.update(8);                   // [8, 2]                 max 8   -> 56
  CHECK(d.scale() == 56.0f);
  d.update(1);                   // [1, 8, 2]              max 8   -> 56 (the 8 is remembered)
  CHECK(d.scale() == 56.0f);
  d.update(1);                   // [1, 1, 8]
  CHECK(d.scale() == 56.0f);
  d.update(1);                   // [1, 1, 1]: the 8 left  -> 448
  CHECK(d.scale() == 448.0f);
  d.update(0);                   // [0, 1, 1]              max 1   -> 448
  CHECK(d.scale() == 448.0f);
  d.update(NAN);                 // [NaN, 0, 1]            max NaN -> unchanged
  CHECK(d.scale() == 448.0f);
  d.update(4);                   // [4, NaN, 0]            still NaN
  CHECK(d.scale() == 448.0f);
  d.update(4);                   // [4, 4, NaN]
  CHECK(d.scale() == 448.0f);
  d.update(4);                   // [4, 4, 4]: the NaN left -> 112
  CHECK(d.scale() == 112.0f);
  CHECK(d.history().size() == 3);

  DelayedScaling m(Format::E4M3, 4, 2);  // margin 2: 448 / 2 / 4
  m.update(2);
  CHECK(m.scale() == 56.0f);
  DelayedScaling z(Format::E4M3, 4, 0);  // only zeros: the scale stays 1
  z.update(0);
  z.update(0);
  CHECK(z.scale() == 1.0f);
  DelayedScaling g(Format::E5M2, 2, 0);
  g.update(57344);
  CHECK(g.scale() == 1.0f);
  CHECK_THROWS_AS(DelayedScaling(Format::E4M3, 0, 0), std::invalid_argument);
}

TEST_CASE("fp8 block scaling: one scale per 1×128 tile and per 128×128 block") {
  // (2, 256): row 0 has amax 4 in its first tile and 0.5 in its second; row 1 is all 1 but 8
  std::vector<float> v(512, 0.0f);
  v[3] = -4.0f;
  v[200] = 0.5f;
  for (int c = 0; c < 256; ++c) v[size_t(256 + c)] = 1.0f;
  v[256 + 130] = 8.0f;
  Tensor x = Tensor::from_vector(v, {2, 256});
  CHECK(block_scales(x, kTile1x128, Format::E4M3) == std::vector<float>{112, 896, 448, 56});
  CHECK(block_scales(x, kBlock128x128, Format::E4M3) == std::vector<float>{112, 56});  // both rows in one block
  CHECK(block_scales(Tensor::zeros({1, 128}), kTile1x128, Format::E4M3) == std::vector<float>{1});
}

TEST_CASE("fp8 MX: a power-of-two E8M0 scale per block of 32") {
  // e = floor(log2 amax) − 8 for E4M3
  CHECK(mx_shared_exponent(448.0f, Format::E4M3) == 0);   // 448 = 1.75·2^8
  CHECK(mx_shared_exponent(500.0f, Format::E4M3) == 0);   // 500/1 = 500 > 448: saturates
  CHECK(mx_shared_exponent(1.0f, Format::E4M3) == -8);    // 1 -> 256
  CHECK(mx_shared_exponent(0.3f, Format::E4M3) == -10);   // 0.3 = 1.2·2^-2 -> 307.2
  CHECK(mx_shared_exponent(1.0f, Format::E5M2) == -15);   // 57344 = 1.75·2^15
  CHECK(mx_shared_exponent(0.0f, Format::E4M3) == 0);
  CHECK(mx_shared_exponent(1e-38f, Format::E4M3) == -127);  // clamped to E8M0's range
  CHECK(e8m0_encode(-8) == 119);
  CHECK(e8m0_decode(119) == 0x1p-8f);
  CHECK(std::isnan(e8m0_decode(0xFF)));
  std::vector<float> v(64, 0.0f);
  v[0] = 0.3f;   // block 0: amax 0.3 -> X = 2^-10, multiplier 1024
  v[40] = 1.0f;  // block 1: amax 1 -> X = 2^-8, multiplier 256
  Tensor x = Tensor::from_vector(v, {1, 64});
  const std::vector<float> s = mx_scales(x, Format::E4M3);
  CHECK(s == std::vector<float>{1024, 256});
  Fp8Tensor q = quantize(x, Format::E4M3, kMxBlock32, s);
  CHECK(decode(q.codes[0], Format::E4M3) == 320.0f);  // 307.2: between 288 and 320, nearer 320
  CHECK(decode(q.codes[40], Format::E4M3) == 256.0f);
}

TEST_CASE("fp8 recipes: names, formats and tiles of each role") {
  CHECK(parse_recipe("mx") == Recipe::Mx);
  CHECK_THROWS_WITH_AS(parse_recipe("tensorwise"), doctest::Contains("current, delayed, block or mx"),
                       std::invalid_argument);
  RecipeConfig hybrid{Recipe::Block, true};
  CHECK(role_format(hybrid, Role::Input) == Format::E4M3);
  CHECK(role_format(hybrid, Role::GradOutput) == Format::E5M2);
  CHECK(role_format({Recipe::Block, false}, Role::GradOutput) == Format::E4M3);
  CHECK(role_tile(hybrid, Role::Weight).rows == 128);
  CHECK(role_tile(hybrid, Role::Input).rows == 1);
  CHECK(role_tile({Recipe::Delayed}, Role::Input).cols == 0);
  CHECK(role_tile({Recipe::Mx}, Role::Weight).cols == 32);
}
