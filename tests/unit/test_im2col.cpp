// im2col / col2im against direct convolution loops, and the adjoint identity.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "framework/cpu/im2col.h"

using hg::ConvGeometry;

namespace {

// Direct convolution of one image: y (F, OH, OW) = Σ_c,kh,kw w[f][c][kh][kw] · x[c][ih][iw].
std::vector<double> conv_direct(const std::vector<double>& x, const std::vector<double>& w, int64_t F,
                                const ConvGeometry& g) {
  const int64_t OH = g.out_h(), OW = g.out_w();
  std::vector<double> y(size_t(F * OH * OW), 0.0);
  for (int64_t f = 0; f < F; ++f)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double s = 0;
        for (int64_t c = 0; c < g.C; ++c)
          for (int64_t kh = 0; kh < g.KH; ++kh)
            for (int64_t kw = 0; kw < g.KW; ++kw) {
              const int64_t ih = oh * g.stride_h - g.pad_h + kh, iw = ow * g.stride_w - g.pad_w + kw;
              if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
              s += w[size_t(((f * g.C + c) * g.KH + kh) * g.KW + kw)] * x[size_t((c * g.H + ih) * g.W + iw)];
            }
        y[size_t((f * OH + oh) * OW + ow)] = s;
      }
  return y;
}

// Direct input gradient: dx[c][ih][iw] = Σ over (f, oh, ow) whose window covers (ih, iw).
std::vector<double> conv_dx_direct(const std::vector<double>& dy, const std::vector<double>& w, int64_t F,
                                   const ConvGeometry& g) {
  const int64_t OH = g.out_h(), OW = g.out_w();
  std::vector<double> dx(size_t(g.C * g.H * g.W), 0.0);
  for (int64_t f = 0; f < F; ++f)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t c = 0; c < g.C; ++c)
          for (int64_t kh = 0; kh < g.KH; ++kh)
            for (int64_t kw = 0; kw < g.KW; ++kw) {
              const int64_t ih = oh * g.stride_h - g.pad_h + kh, iw = ow * g.stride_w - g.pad_w + kw;
              if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
              dx[size_t((c * g.H + ih) * g.W + iw)] +=
                  dy[size_t((f * OH + oh) * OW + ow)] * w[size_t(((f * g.C + c) * g.KH + kh) * g.KW + kw)];
            }
  return dx;
}

ConvGeometry geom(int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t s, int64_t p) {
  ConvGeometry g;
  g.C = C, g.H = H, g.W = W, g.KH = KH, g.KW = KW, g.stride_h = g.stride_w = s, g.pad_h = g.pad_w = p;
  return g;
}

const ConvGeometry kGeoms[] = {
    geom(1, 5, 5, 3, 3, 1, 1), geom(3, 7, 6, 3, 3, 2, 1), geom(2, 8, 8, 1, 1, 1, 0),
    geom(4, 9, 7, 5, 3, 2, 2), geom(2, 6, 6, 2, 2, 2, 0), geom(1, 28, 28, 3, 3, 1, 1),
    geom(3, 4, 4, 4, 4, 1, 0), geom(2, 10, 11, 3, 2, 3, 1)};

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

}  // namespace

TEST_CASE("conv forward through im2col + matmul equals direct convolution") {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> U(-1, 1);
  for (const auto& g : kGeoms) {
    const int64_t F = 3, P = g.positions(), CKK = g.patch(), ld = P + 4;  // ld > P: strided cols
    std::vector<double> x(size_t(g.C * g.H * g.W)), w(size_t(F * CKK));
    for (auto& v : x) v = U(rng);
    for (auto& v : w) v = U(rng);
    std::vector<double> cols(size_t(CKK * ld), 1e300);
    hg::cpu::im2col(x.data(), g, cols.data(), ld);
    std::vector<double> y(size_t(F * P), 0.0);  // Y (F, P) = W (F, CKK) · cols (CKK, P)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t r = 0; r < CKK; ++r)
        for (int64_t q = 0; q < P; ++q) y[size_t(f * P + q)] += w[size_t(f * CKK + r)] * cols[size_t(r * ld + q)];
    const auto ref = conv_direct(x, w, F, g);
    const double d = max_abs_diff(y, ref);
    INFO("C=" << g.C << " H=" << g.H << " W=" << g.W << " K=" << g.KH << "x" << g.KW << " s=" << g.stride_h
              << " p=" << g.pad_h << ": max |diff| " << d);
    CHECK(d <= 1e-12 * CKK);
    // The F32 version copies the same values (a copy is exact).
    std::vector<float> xf(x.begin(), x.end()), colsf(size_t(CKK * ld));
    hg::cpu::im2col(xf.data(), g, colsf.data(), ld);
    int64_t differ = 0;
    for (int64_t r = 0; r < CKK; ++r)
      for (int64_t q = 0; q < P; ++q) differ += colsf[size_t(r * ld + q)] != float(cols[size_t(r * ld + q)]);
    CHECK(differ == 0);
  }
}

TEST_CASE("col2im of W^T dY equals the direct input gradient") {
  std::mt19937 rng(4);
  std::uniform_real_distribution<double> U(-1, 1);
  for (const auto& g : kGeoms) {
    const int64_t F = 2, P = g.positions(), CKK = g.patch();
    std::vector<double> dy(size_t(F * P)), w(size_t(F * CKK));
    for (auto& v : dy) v = U(rng);
    for (auto& v : w) v = U(rng);
    std::vector<double> dcols(size_t(CKK * P), 0.0);  // dcols (CKK, P) = Wᵀ · dY
    for (int64_t r = 0; r < CKK; ++r)
      for (int64_t f = 0; f < F; ++f)
        for (int64_t q = 0; q < P; ++q) dcols[size_t(r * P + q)] += w[size_t(f * CKK + r)] * dy[size_t(f * P + q)];
    std::vector<double> dx(size_t(g.C * g.H * g.W), 1e300);  // overwritten
    hg::cpu::col2im(dcols.data(), g, P, dx.data());
    const double d = max_abs_diff(dx, conv_dx_direct(dy, w, F, g));
    INFO("C=" << g.C << " H=" << g.H << " K=" << g.KH << "x" << g.KW << " s=" << g.stride_h << ": max |diff| " << d);
    CHECK(d <= 1e-12 * CKK);
  }
}

TEST_CASE("col2im is the adjoint of im2col") {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> U(-1, 1);
  for (const auto& g : kGeoms) {
    const int64_t P = g.positions(), CKK = g.patch(), ld = P + 1;
    std::vector<double> x(size_t(g.C * g.H * g.W)), y(size_t(CKK * ld)), cols(size_t(CKK * ld), 0.0),
        back(x.size());
    for (auto& v : x) v = U(rng);
    for (auto& v : y) v = U(rng);
    hg::cpu::im2col(x.data(), g, cols.data(), ld);
    hg::cpu::col2im(y.data(), g, ld, back.data());
    double lhs = 0, rhs = 0, mag = 0;
    for (int64_t r = 0; r < CKK; ++r)
      for (int64_t q = 0; q < P; ++q) {
        lhs += cols[size_t(r * ld + q)] * y[size_t(r * ld + q)];
        mag += std::fabs(cols[size_t(r * ld + q)] * y[size_t(r * ld + q)]);
      }
    for (size_t i = 0; i < x.size(); ++i) rhs += x[i] * back[i];
    INFO("<im2col(x), y> = " << lhs << ", <x, col2im(y)> = " << rhs);
    CHECK(std::fabs(lhs - rhs) <= 1e-13 * (1 + mag));
    // float version agrees with the double one
    std::vector<float> yf(y.begin(), y.end()), backf(x.size());
    hg::cpu::col2im(yf.data(), g, ld, backf.data());
    double d = 0;
    for (size_t i = 0; i < x.size(); ++i) d = std::max(d, std::fabs(backf[i] - back[i]));
    CHECK(d <= 1e-5 * CKK);
  }
}

TEST_CASE("batched layout puts images side by side in one matrix") {
  const ConvGeometry g = geom(2, 5, 4, 3, 3, 1, 1);
  const int64_t N = 3, P = g.positions(), CKK = g.patch();
  std::vector<float> x(size_t(N * g.C * g.H * g.W));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 13) - 6.f;
  std::vector<float> batched(size_t(CKK * N * P));
  for (int64_t n = 0; n < N; ++n) hg::cpu::im2col(&x[size_t(n * g.C * g.H * g.W)], g, &batched[size_t(n * P)], N * P);
  int64_t differ = 0;
  for (int64_t n = 0; n < N; ++n) {
    std::vector<float> one(size_t(CKK * P));
    hg::cpu::im2col(&x[size_t(n * g.C * g.H * g.W)], g, one.data(), P);
    for (int64_t r = 0; r < CKK; ++r)
      for (int64_t q = 0; q < P; ++q) differ += one[size_t(r * P + q)] != batched[size_t(r * N * P + n * P + q)];
  }
  CHECK(differ == 0);
}

TEST_CASE("bad geometry is refused with a message") {
  ConvGeometry g = geom(1, 2, 2, 5, 5, 1, 0);
  std::vector<float> x(4), cols(100);
  CHECK_THROWS_WITH_AS(hg::cpu::im2col(x.data(), g, cols.data(), 1), doctest::Contains("larger than the padded input"),
                       std::invalid_argument);
  g = geom(1, 4, 4, 3, 3, 0, 0);
  CHECK_THROWS_AS(hg::cpu::im2col(x.data(), g, cols.data(), 1), std::invalid_argument);
}

TEST_CASE("im2col_batch and col2im_batch equal the image-by-image calls") {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> U(-1, 1);
  for (const auto& g : kGeoms) {
    const int64_t N = 5, P = g.positions(), CKK = g.patch(), NP = N * P, image = g.C * g.H * g.W;
    std::vector<float> x(size_t(N * image)), cols(size_t(CKK * NP)), ref(cols.size());
    for (auto& v : x) v = U(rng);
    hg::cpu::im2col_batch(x.data(), N, g, cols.data());
    for (int64_t n = 0; n < N; ++n) hg::cpu::im2col(&x[size_t(n * image)], g, &ref[size_t(n * P)], NP);
    int64_t differ = 0;
    for (size_t i = 0; i < cols.size(); ++i) differ += cols[i] != ref[i];
    std::vector<float> y(cols.size()), dx(x.size(), 1e30f), dx_ref(x.size());
    for (auto& v : y) v = U(rng);
    hg::cpu::col2im_batch(y.data(), N, g, dx.data());
    for (int64_t n = 0; n < N; ++n) hg::cpu::col2im(&y[size_t(n * P)], g, NP, &dx_ref[size_t(n * image)]);
    for (size_t i = 0; i < dx.size(); ++i) differ += dx[i] != dx_ref[i];
    INFO("C=" << g.C << " H=" << g.H << " W=" << g.W << " K=" << g.KH << "x" << g.KW << " s=" << g.stride_h
              << " p=" << g.pad_h << ": " << differ << " values differ");
    CHECK(differ == 0);
  }
}
