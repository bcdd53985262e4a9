// CPU tests of the index math behind the GPU's batched convolution and its batch norm
// (cuda/ops/conv_index.h, cuda/ops/batchnorm.h), run through the same functions the kernels
// call:
//   im2col over a batch   cols (CKK, N·P) equals the CPU engine's im2col of each image, side by side
//   swap01                the axis swap around the GEMM is a permutation and its own inverse
//   images per GEMM       one GEMM for every layer of the chapters' models; at least one image;
//                         the output and the columns stay within the budget
//   conv as one GEMM      y = swap(W · cols) + b equals the CPU's per-image convolution
//   batch-norm slices     the (C, S) blocks cover each channel's values exactly once, and a
//                         wide layer gets many blocks
#include <doctest/doctest.h>

#include <vector>

#include "cuda/ops/batchnorm.h"
#include "cuda/ops/conv_index.h"
#include "framework/cpu/gemm.h"
#include "framework/cpu/im2col.h"

using namespace hg::cuda;
using hg::ConvGeometry;

namespace {

struct Case { int64_t N, C, H, W, K, stride, pad; };

// One geometry for the GPU's index maps and the CPU's im2col (framework/cpu/conv_geometry.h).
ConvGeometry geometry(const Case& c) { return ConvGeometry::of(c.C, c.H, c.W, c.K, c.K, c.stride, c.pad); }

// cols (CKK, N·P) as the kernel fills it: one element per (r, col), from im2col_batch_source.
std::vector<float> batch_im2col(const std::vector<float>& x, int64_t N, const ConvGeometry& g) {
  const int64_t NP = N * g.positions(), image = g.C * g.H * g.W;
  std::vector<float> cols(g.patch() * NP);
  for (int64_t e = 0; e < int64_t(cols.size()); ++e) {
    int64_t n, c, h, w;
    cols[e] = im2col_batch_source(g, e / NP, e % NP, n, c, h, w) ? x[n * image + (c * g.H + h) * g.W + w] : 0.0f;
  }
  return cols;
}

std::vector<float> values(int64_t n, int seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = float((i * 37 + seed * 11) % 17) - 8.0f;  // small integers: exact sums
  return v;
}

const Case kCases[] = {{1, 3, 9, 8, 3, 1, 1}, {3, 2, 11, 11, 5, 2, 2}, {4, 4, 6, 7, 2, 2, 0}, {2, 5, 7, 7, 1, 1, 0}};

}  // namespace

TEST_CASE("im2col over a batch: image n's columns are the CPU's im2col of image n") {
  for (const Case& c : kCases) {
    CAPTURE(c.N);
    CAPTURE(c.K);
    const ConvGeometry g = geometry(c);
    const int64_t P = g.positions(), NP = c.N * P, image = c.C * c.H * c.W;
    const std::vector<float> x = values(c.N * image, 1);
    std::vector<float> want(g.patch() * NP);
    for (int64_t n = 0; n < c.N; ++n) hg::cpu::im2col(x.data() + n * image, geometry(c), want.data() + n * P, NP);
    CHECK(batch_im2col(x, c.N, g) == want);
  }
}

TEST_CASE("swap01: a permutation, its own inverse with the first two sizes exchanged") {
  const int64_t A = 3, B = 5, C = 4;
  std::vector<int> seen(A * B * C, 0);
  for (int64_t j = 0; j < A * B * C; ++j) {
    const int64_t src = swap01_source(j, A, B, C);
    REQUIRE(src >= 0);
    REQUIRE(src < A * B * C);
    ++seen[src];
    CHECK(swap01_source(src, B, A, C) == j);
    // y (A, B, C)[a][b][c] = x (B, A, C)[b][a][c]
    const int64_t c = j % C, b = (j / C) % B, a = j / (B * C);
    CHECK(src == (b * A + a) * C + c);
  }
  for (int v : seen) CHECK(v == 1);
}

TEST_CASE("images per GEMM: the whole batch of the chapters' layers, a few GEMMs for a huge one") {
  // ResNet-50 on 28 x 28 FashionMNIST at batch 256: the stem (1 -> 64, 7 x 7, stride 2: 14 x 14)
  // and a 3 x 3 layer of 64 channels at 7 x 7; SmallCNN's first layer (1 -> 32, 3 x 3, 28 x 28).
  CHECK(conv_images_per_gemm(49, 64, 196, 256) == 256);
  CHECK(conv_images_per_gemm(576, 64, 49, 256) == 256);
  CHECK(conv_images_per_gemm(9, 32, 784, 256) == 256);
  // 16 channels, 3 x 3, 32 x 32 positions: 144 x 1024 values per image -> 113 images per GEMM
  const int64_t nb = conv_images_per_gemm(144, 16, 1024, 120);
  CHECK(nb == 113);
  CHECK(144 * 1024 * nb <= kConvMaxGemmElements);
  CHECK(144 * 1024 * (nb + 1) > kConvMaxGemmElements);
  CHECK(conv_images_per_gemm(1 << 20, 64, 1 << 10, 8) == 1);  // one image over the budget: still one
  CHECK(conv_images_per_gemm(9, 4096, 1000, 10000) * 4096 * 1000 <= kConvMaxGemmElements);  // F bounds the output
}

TEST_CASE("conv as one GEMM over the batch: swap(W · cols) + b equals the CPU's per-image convolution") {
  const Case c{3, 2, 6, 5, 3, 1, 1};
  const ConvGeometry g = geometry(c);
  const int64_t F = 4, P = g.positions(), NP = c.N * P, CKK = g.patch(), image = c.C * c.H * c.W;
  const std::vector<float> x = values(c.N * image, 2), w = values(F * CKK, 3), b = {1, -2, 3, 0.5f};
  // GPU recipe, on the CPU: Y' (F, N·P) = W · cols; y[n][f][p] = Y'[swap01_source] + b[f]
  const std::vector<float> cols = batch_im2col(x, c.N, g);
  std::vector<float> yt(F * NP), y(c.N * F * P);
  hg::cpu::sgemm(false, false, F, NP, CKK, 1.0f, w.data(), CKK, cols.data(), NP, 0.0f, yt.data(), NP);
  for (int64_t j = 0; j < int64_t(y.size()); ++j) y[j] = yt[swap01_source(j, c.N, F, P)] + b[(j / P) % F];
  // The CPU engine's recipe, one image at a time.
  std::vector<float> want(y.size()), cols1(CKK * P);
  for (int64_t n = 0; n < c.N; ++n) {
    hg::cpu::im2col(x.data() + n * image, geometry(c), cols1.data(), P);
    hg::cpu::sgemm(false, false, F, P, CKK, 1.0f, w.data(), CKK, cols1.data(), P, 0.0f, want.data() + n * F * P, P);
    for (int64_t f = 0; f < F; ++f)
      for (int64_t p = 0; p < P; ++p) want[(n * F + f) * P + p] += b[f];
  }
  CHECK(y == want);
}

TEST_CASE("batch norm: the (C, S) blocks cover every value of every channel once") {
  struct Layer { int64_t N, C, HW; };
  for (const Layer& l : {Layer{256, 64, 56 * 56}, Layer{256, 2048, 1}, Layer{2, 3, 10}, Layer{7, 1, 5000},
                         Layer{1, 1, 1}}) {
    CAPTURE(l.C);
    CAPTURE(l.HW);
    const int64_t M = l.N * l.HW, S = bn_slices(l.C, M);
    CHECK(S >= 1);
    CHECK(S <= kMaxBnSlices);
    std::vector<int> seen(l.N * l.C * l.HW, 0);
    for (int64_t c = 0; c < l.C; ++c)
      for (int64_t s = 0; s < S; ++s) {
        int64_t first, last;
        bn_slice_range(s, S, M, first, last);
        CHECK(first <= last);
        for (int64_t j = first; j < last; ++j) {
          const int64_t at = bn_index(j, c, l.C, l.HW);
          REQUIRE(at >= 0);
          REQUIRE(at < int64_t(seen.size()));
          ++seen[at];
          CHECK((at / l.HW) % l.C == c);  // the value belongs to channel c
        }
      }
    for (int v : seen) REQUIRE(v == 1);
  }
  // A layer with few channels and many values gets many blocks; one with many channels, one slice each.
  CHECK(bn_slices(64, 256 * 56 * 56) == 16);
  CHECK(bn_slices(2048, 256) == 1);
}
