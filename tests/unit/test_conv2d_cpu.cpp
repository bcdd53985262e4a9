// hg::cpu::conv2d_forward / conv2d_backward against direct convolution loops in double.
#include <doctest/doctest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <vector>

#include "framework/cpu/conv2d.h"

using hg::ConvGeometry;

namespace {

ConvGeometry geom(int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t s, int64_t p) {
  ConvGeometry g;
  g.C = C, g.H = H, g.W = W, g.KH = KH, g.KW = KW, g.stride_h = g.stride_w = s, g.pad_h = g.pad_w = p;
  return g;
}

// Direct loops: y[n][f][oh][ow] = b[f] + Σ w[f][c][kh][kw]·x[n][c][ih][iw], and the three
// gradients of Σ y·dy, each accumulated term by term. `mag` gets Σ|terms| for tolerances.
struct Direct {
  std::vector<double> y, dx, dw, db, y_mag, dx_mag, dw_mag;
};
Direct direct(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
              const std::vector<double>& dy, int64_t N, int64_t F, const ConvGeometry& g) {
  const int64_t OH = g.out_h(), OW = g.out_w(), P = OH * OW, CKK = g.patch(), img = g.C * g.H * g.W;
  Direct d;
  d.y.assign(size_t(N * F * P), 0), d.y_mag = d.y;
  d.dx.assign(size_t(N * img), 0), d.dx_mag = d.dx;
  d.dw.assign(size_t(F * CKK), 0), d.dw_mag = d.dw;
  d.db.assign(size_t(F), 0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const size_t yi = size_t((n * F + f) * P + oh * OW + ow);
          d.y[yi] += b[size_t(f)];
          d.y_mag[yi] += std::fabs(b[size_t(f)]);
          d.db[size_t(f)] += dy[yi];
          for (int64_t c = 0; c < g.C; ++c)
            for (int64_t kh = 0; kh < g.KH; ++kh)
              for (int64_t kw = 0; kw < g.KW; ++kw) {
                const int64_t ih = oh * g.stride_h - g.pad_h + kh, iw = ow * g.stride_w - g.pad_w + kw;
                if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                const size_t xi = size_t(n * img + (c * g.H + ih) * g.W + iw);
                const size_t wi = size_t(f * CKK + (c * g.KH + kh) * g.KW + kw);
                d.y[yi] += w[wi] * x[xi];
                d.y_mag[yi] += std::fabs(w[wi] * x[xi]);
                d.dx[xi] += w[wi] * dy[yi];
                d.dx_mag[xi] += std::fabs(w[wi] * dy[yi]);
                d.dw[wi] += x[xi] * dy[yi];
                d.dw_mag[wi] += std::fabs(x[xi] * dy[yi]);
              }
        }
  return d;
}

// max over i of |got - ref| / (atol + rtol·mag): ≤ 1 passes
template <class T>
double worst(const std::vector<T>& got, const std::vector<double>& ref, const std::vector<double>& mag, double rtol) {
  double m = 0;
  for (size_t i = 0; i < got.size(); ++i)
    m = std::max(m, std::fabs(double(got[i]) - ref[i]) / (1e-12 + rtol * (mag.empty() ? std::fabs(ref[i]) + 1 : mag[i])));
  return m;
}

template <class T>
void check_against_direct(double rtol) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> U(-1, 1);
  const ConvGeometry geoms[] = {geom(1, 28, 28, 3, 3, 1, 1), geom(3, 9, 7, 3, 3, 2, 1), geom(4, 6, 6, 5, 3, 1, 2),
                                geom(2, 8, 8, 1, 1, 1, 0)};
  const int saved = omp_get_max_threads();
  for (int threads : {1, 2, 4})
    for (const auto& g : geoms) {
      omp_set_num_threads(threads);
      const int64_t N = 3, F = 5, P = g.positions(), CKK = g.patch(), img = g.C * g.H * g.W;
      std::vector<double> x(size_t(N * img)), w(size_t(F * CKK)), b(static_cast<size_t>(F)), dy(size_t(N * F * P));
      for (auto* v : {&x, &w, &b, &dy})
        for (auto& e : *v) e = U(rng);
      const Direct ref = direct(x, w, b, dy, N, F, g);
      std::vector<T> xt(x.begin(), x.end()), wt(w.begin(), w.end()), bt(b.begin(), b.end()), dyt(dy.begin(), dy.end());
      std::vector<T> y(ref.y.size(), T(7)), dx(ref.dx.size(), T(7)), dw(ref.dw.size(), T(7)), db(ref.db.size(), T(7));
      hg::cpu::conv2d_forward(xt.data(), wt.data(), bt.data(), y.data(), N, F, g);
      hg::cpu::conv2d_backward(xt.data(), wt.data(), dyt.data(), dx.data(), dw.data(), db.data(), N, F, g);
      const double ey = worst(y, ref.y, ref.y_mag, rtol), edx = worst(dx, ref.dx, ref.dx_mag, rtol),
                   edw = worst(dw, ref.dw, ref.dw_mag, rtol), edb = worst(db, ref.db, {}, rtol * N * P);
      INFO("threads " << threads << " C=" << g.C << " H=" << g.H << " W=" << g.W << " K=" << g.KH << "x" << g.KW
                      << " s=" << g.stride_h << " p=" << g.pad_h << ": err/tol y " << ey << ", dx " << edx << ", dw "
                      << edw << ", db " << edb);
      CHECK(ey <= 1);
      CHECK(edx <= 1);
      CHECK(edw <= 1);
      CHECK(edb <= 1);
      // Gradients not asked for are skipped, the others unchanged.
      std::vector<T> dw2(dw.size(), T(7));
      hg::cpu::conv2d_backward(xt.data(), wt.data(), dyt.data(), nullptr, dw2.data(), nullptr, N, F, g);
      CHECK(dw2 == dw);
    }
  omp_set_num_threads(saved);
}

}  // namespace

TEST_CASE("conv2d_cpu gives the same bits with 1 and 2 and 3 threads") {
  const ConvGeometry g = geom(3, 10, 9, 3, 3, 1, 1);
  const int64_t N = 37, F = 4, P = g.positions(), CKK = g.patch(), img = g.C * g.H * g.W;
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> U(-1, 1);
  std::vector<float> x(size_t(N * img)), w(size_t(F * CKK)), b(static_cast<size_t>(F)), dy(size_t(N * F * P));
  for (auto* v : {&x, &w, &b, &dy})
    for (auto& e : *v) e = U(rng);
  const int saved = omp_get_max_threads();
  std::vector<std::vector<float>> results;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    std::vector<float> y(size_t(N * F * P)), dx(x.size()), dw(w.size()), db(b.size());
    hg::cpu::conv2d_forward(x.data(), w.data(), b.data(), y.data(), N, F, g);
    hg::cpu::conv2d_backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), N, F, g);
    y.insert(y.end(), dx.begin(), dx.end());
    y.insert(y.end(), dw.begin(), dw.end());
    y.insert(y.end(), db.begin(), db.end());
    results.push_back(y);
  }
  omp_set_num_threads(saved);
  CHECK(results[0] == results[1]);
  CHECK(results[0] == results[2]);
}

TEST_CASE("conv2d_cpu float forward and backward equal direct loops") { check_against_direct<float>(4 * 6e-8 * 300); }

TEST_CASE("conv2d_cpu double forward and backward equal direct loops") { check_against_direct<double>(4 * 1.1e-16 * 300); }
