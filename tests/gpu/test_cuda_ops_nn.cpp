// GPU tests of the network kernels (cuda/ops/): softmax / log_softmax / cross entropy,
// im2col / col2im (against the CPU engine's hg::cpu::im2col / col2im), pooling, batch norm
// (backward against F64 finite differences) and the SGD / Adam updates, each vs a CPU loop.
#include "tests/gpu/typed_buffer.h"

#include "cuda/ops/batchnorm.h"
#include "cuda/ops/conv.h"
#include "cuda/ops/optim.h"
#include "cuda/ops/softmax.h"
#include "framework/cpu/im2col.h"

#include <cfloat>
#include <cmath>
#include <string>

using namespace hg::cuda;
using hg::ConvGeometry;
using hg::test::DeviceBuffer;
using hg::test::Typed;
using hg::test::round_to;
using hg::test::storage_rtol;
using hg::test::uniform;

namespace {

std::string tag(const std::string& what, DType dt) { return what + " " + dtype_name(dt); }

void test_softmax(hg::test::Checker& t) {
  const int64_t outer = 5, d = 37, inner = 3;  // softmax along the middle dim of (5, 37, 3)
  const int64_t n = outer * d * inner;
  for (DType dt : hg::test::kAllDtypes)
    for (bool log : {false, true}) {
      const auto x = round_to(dt, uniform(n, -8, 8, 1)), dy = round_to(dt, uniform(n, -1, 1, 2));
      Typed dx_in(dt, x), ddy(dt, dy), y(dt, n), dx(dt, n);
      launch_softmax_forward(dt, dx_in.ptr(), y.ptr(), outer, d, inner, log);
      const std::vector<float> got_y = y.to_host();
      std::vector<float> want_y(n), want_dx(n);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          auto at = [&](int64_t k) { return (o * d + k) * inner + i; };
          double m = -INFINITY, s = 0, dot = 0;
          for (int64_t k = 0; k < d; ++k) m = std::max(m, double(x[at(k)]));
          for (int64_t k = 0; k < d; ++k) s += std::exp(x[at(k)] - m);
          for (int64_t k = 0; k < d; ++k) {
            const double v = x[at(k)] - m;
            want_y[at(k)] = round_to(dt, float(log ? v - std::log(s) : std::exp(v) / s));
          }
          // backward from the stored y (as the framework passes it)
          for (int64_t k = 0; k < d; ++k) dot += log ? dy[at(k)] : double(dy[at(k)]) * got_y[at(k)];
          for (int64_t k = 0; k < d; ++k) {
            const double yk = got_y[at(k)];
            want_dx[at(k)] = round_to(dt, float(log ? dy[at(k)] - std::exp(yk) * dot : yk * (dy[at(k)] - dot)));
          }
        }
      const std::string name = log ? "log_softmax" : "softmax";
      t.close(tag(name + " forward (5,37,3) dim 1", dt), got_y, want_y, 1e-6, storage_rtol(dt) + 1e-5);
      launch_softmax_backward(dt, y.ptr(), ddy.ptr(), dx.ptr(), outer, d, inner, log);
      t.close(tag(name + " backward", dt), dx.to_host(), want_dx, dt == DType::F32 ? 1e-6 : 1e-3, storage_rtol(dt) + 1e-5);
    }
}

void test_cross_entropy(hg::test::Checker& t) {
  const int64_t N = 40, C = 10;
  std::vector<int32_t> targets(N);
  for (int64_t i = 0; i < N; ++i) targets[i] = int32_t((i * 7) % C);
  DeviceBuffer<int32_t> dt_targets(targets);
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    const auto x = round_to(dt, uniform(N * C, -5, 5, 3));
    Typed dx_in(dt, x), loss(dt, 1), dloss(dt, std::vector<float>{2.0f}), dx(dt, N * C);
    launch_cross_entropy_forward(dt, dx_in.ptr(), dt_targets.ptr, N, C, loss.ptr());
    double total = 0;
    std::vector<float> want_dx(N * C);
    for (int64_t n = 0; n < N; ++n) {
      double m = -INFINITY, s = 0;
      for (int64_t c = 0; c < C; ++c) m = std::max(m, double(x[n * C + c]));
      for (int64_t c = 0; c < C; ++c) s += std::exp(x[n * C + c] - m);
      total += m + std::log(s) - x[n * C + targets[n]];
      for (int64_t c = 0; c < C; ++c)
        want_dx[n * C + c] = round_to(dt, float(2.0 / N * (std::exp(x[n * C + c] - m) / s - (c == targets[n]))));
    }
    t.close(tag("cross_entropy forward (40,10)", dt), loss.to_host(), {round_to(dt, float(total / N))}, 1e-6, storage_rtol(dt) + 1e-5);
    launch_cross_entropy_backward(dt, dx_in.ptr(), dt_targets.ptr, dloss.ptr(), N, C, dx.ptr());
    t.close(tag("cross_entropy backward, dloss = 2", dt), dx.to_host(), want_dx, 1e-7, storage_rtol(dt) + 1e-5);
  }
  // A bad class id gives NaN, not a read out of bounds.
  std::vector<int32_t> bad = targets;
  bad[3] = int32_t(C);
  DeviceBuffer<int32_t> dbad(bad);
  Typed x(DType::F32, uniform(N * C, -1, 1, 4)), loss(DType::F32, 1);
  launch_cross_entropy_forward(DType::F32, x.ptr(), dbad.ptr, N, C, loss.ptr());
  t.expect("cross_entropy with a class id out of range -> NaN", std::isnan(loss.to_host()[0]));
}

// im2col / col2im over a batch: image n's columns are columns n·P .. n·P + P − 1 of (CKK, N·P),
// which is the CPU's im2col of image n written with a row stride of N·P.
void test_im2col(hg::test::Checker& t) {
  struct G { int64_t N, C, H, W, K, s, p; };
  for (G c : {G{1, 3, 9, 8, 3, 1, 1}, G{3, 2, 11, 11, 5, 2, 2}, G{5, 4, 6, 7, 2, 2, 0}}) {
    const ConvGeometry g = ConvGeometry::of(c.C, c.H, c.W, c.K, c.K, c.s, c.p);  // the CPU's and the GPU's
    const int64_t P = g.positions(), CKK = g.patch(), NP = c.N * P, image = c.C * c.H * c.W;
    const std::string shape = " N" + std::to_string(c.N) + " C" + std::to_string(c.C) + " " + std::to_string(c.H) +
                              "x" + std::to_string(c.W) + " k" + std::to_string(c.K) + " s" + std::to_string(c.s) +
                              " p" + std::to_string(c.p);
    const auto x = uniform(c.N * image, -1, 1, 5);
    for (DType dt : hg::test::kAllDtypes) {
      const auto xr = round_to(dt, x);
      Typed dx(dt, xr), cols(dt, std::vector<float>(CKK * NP, 0.0f));
      launch_im2col(dt, dx.ptr(), c.N, g, cols.ptr());
      std::vector<float> want(CKK * NP, 0.0f);
      for (int64_t n = 0; n < c.N; ++n) hg::cpu::im2col(xr.data() + n * image, g, want.data() + n * P, NP);
      t.exact(tag("im2col" + shape, dt), cols.to_host(), want, size_t(NP));  // a pure copy: bit-exact
    }
    // col2im of random columns vs the CPU's col2im (sums of up to K*K terms: F32 tolerance)
    const auto cols_v = uniform(CKK * NP, -1, 1, 6);
    std::vector<float> want_x(c.N * image);
    for (int64_t n = 0; n < c.N; ++n) hg::cpu::col2im(cols_v.data() + n * P, g, NP, want_x.data() + n * image);
    Typed dcols(DType::F32, cols_v), dxo(DType::F32, c.N * image);
    launch_col2im(DType::F32, dcols.ptr(), c.N, g, dxo.ptr());
    t.close("col2im" + shape + " F32", dxo.to_host(), want_x, 1e-6, 1e-6);
  }
}

// The axis swaps around the convolution's GEMM: dy (N, F, P) -> (F, N, P), and the F32 GEMM
// result (F, N, P) -> y (N, F, P) + bias, rounded once to the output dtype.
void test_conv_swaps(hg::test::Checker& t) {
  const int64_t N = 3, F = 5, P = 7;
  const auto x = uniform(N * F * P, -2, 2, 9), bias = uniform(F, -1, 1, 10);
  std::vector<float> swapped(N * F * P), out(N * F * P);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t p = 0; p < P; ++p) swapped[(f * N + n) * P + p] = x[(n * F + f) * P + p];
  for (DType dt : hg::test::kAllDtypes) {
    const auto xr = round_to(dt, x);
    Typed dx(dt, xr), dy(dt, N * F * P);
    launch_swap01(dt, dx.ptr(), F, N, P, dy.ptr());
    std::vector<float> want(N * F * P);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t f = 0; f < F; ++f)
        for (int64_t p = 0; p < P; ++p) want[(f * N + n) * P + p] = xr[(n * F + f) * P + p];
    t.exact(tag("swap01 (3,5,7) -> (5,3,7)", dt), dy.to_host(), want, size_t(P));
    // conv_output: acc (F, N, P) F32 -> y (N, F, P) in dt, + bias
    Typed acc(DType::F32, swapped), b(DType::F32, bias), y(dt, N * F * P);
    launch_conv_output(static_cast<const float*>(acc.ptr()), static_cast<const float*>(b.ptr()), N, F, P, dt, y.ptr());
    for (int64_t n = 0; n < N; ++n)
      for (int64_t f = 0; f < F; ++f)
        for (int64_t p = 0; p < P; ++p) out[(n * F + f) * P + p] = round_to(dt, x[(n * F + f) * P + p] + bias[f]);
    t.exact(tag("conv_output (5,3,7) -> (3,5,7) + bias", dt), y.to_host(), out, size_t(P));
  }
}

void test_pooling(hg::test::Checker& t) {
  const int64_t N = 2;
  struct G { int64_t C, H, W, K, s, p; };
  for (G c : {G{3, 8, 8, 2, 2, 0}, G{2, 7, 9, 3, 2, 1}, G{1, 5, 5, 3, 1, 1}}) {
    ConvGeometry g;
    g.C = c.C; g.H = c.H; g.W = c.W; g.KH = g.KW = c.K; g.stride_h = g.stride_w = c.s; g.pad_h = g.pad_w = c.p;
    const int64_t OH = g.out_h(), OW = g.out_w(), nin = N * c.C * c.H * c.W, nout = N * c.C * OH * OW;
    const std::string shape = " " + std::to_string(c.H) + "x" + std::to_string(c.W) + " k" + std::to_string(c.K) +
                              " s" + std::to_string(c.s) + " p" + std::to_string(c.p);
    const auto x = uniform(nin, -1, 1, 7), dy = uniform(nout, -1, 1, 8);
    std::vector<float> want_max(nout), want_avg(nout), want_dmax(nin, 0.0f), want_davg(nin, 0.0f);
    for (int64_t plane = 0; plane < N * c.C; ++plane)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t o = (plane * OH + oh) * OW + ow;
          double best = -DBL_MAX, sum = 0;
          int64_t arg = -1;
          for (int64_t kh = 0; kh < c.K; ++kh)
            for (int64_t kw = 0; kw < c.K; ++kw) {
              const int64_t h = oh * c.s - c.p + kh, w = ow * c.s - c.p + kw;
              if (h < 0 || h >= c.H || w < 0 || w >= c.W) continue;
              const int64_t i = (plane * c.H + h) * c.W + w;
              sum += x[i];
              if (x[i] > best) { best = x[i]; arg = i; }
            }
          want_max[o] = float(best);
          want_avg[o] = float(sum / (c.K * c.K));
          want_dmax[arg] += dy[o];  // scatter on the CPU: the GPU gathers, the sums must agree
          for (int64_t kh = 0; kh < c.K; ++kh)
            for (int64_t kw = 0; kw < c.K; ++kw) {
              const int64_t h = oh * c.s - c.p + kh, w = ow * c.s - c.p + kw;
              if (h >= 0 && h < c.H && w >= 0 && w < c.W) want_davg[(plane * c.H + h) * c.W + w] += dy[o] / (c.K * c.K);
            }
        }
    DeviceBuffer<float> dx(x), ddy(dy), y(nout), dxg(nin);
    DeviceBuffer<int32_t> arg(nout);
    launch_max_pool2d_forward(dx.ptr, N, g, y.ptr, arg.ptr);
    t.exact("max_pool2d forward" + shape, y.to_host(), want_max);
    launch_max_pool2d_backward(ddy.ptr, arg.ptr, N, g, dxg.ptr);
    t.close("max_pool2d backward" + shape, dxg.to_host(), want_dmax, 1e-6, 1e-6);
    launch_avg_pool2d_forward(dx.ptr, N, g, y.ptr);
    t.close("avg_pool2d forward" + shape, y.to_host(), want_avg, 1e-6, 1e-5);
    launch_avg_pool2d_backward(ddy.ptr, N, g, dxg.ptr);
    t.close("avg_pool2d backward" + shape, dxg.to_host(), want_davg, 1e-6, 1e-5);
  }
}

// F64 batch norm (training mode) of x (N, C, HW): y and the loss L = Σ w·y for a fixed w.
void bn_reference(const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                  int64_t N, int64_t C, int64_t HW, double eps, std::vector<double>& y, std::vector<double>& mean,
                  std::vector<double>& var) {
  const int64_t M = N * HW;
  y.assign(x.size(), 0);
  mean.assign(C, 0);
  var.assign(C, 0);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < HW; ++j) mean[c] += x[(n * C + c) * HW + j] / M;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < HW; ++j) var[c] += std::pow(x[(n * C + c) * HW + j] - mean[c], 2) / M;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < HW; ++j) {
        const int64_t i = (n * C + c) * HW + j;
        y[i] = gamma[c] * (x[i] - mean[c]) / std::sqrt(var[c] + eps) + beta[c];
      }
  }
}

void test_batch_norm(hg::test::Checker& t) {
  const int64_t N = 4, C = 3, HW = 10, n = N * C * HW;
  const float eps = 1e-5f, momentum = 0.1f;
  const auto xf = uniform(n, -2, 3, 9), dyf = uniform(n, -1, 1, 10);
  const std::vector<float> gf = {1.5f, -0.5f, 2.0f}, bf = {0.1f, 0.2f, -0.3f};
  std::vector<double> x(xf.begin(), xf.end()), dy(dyf.begin(), dyf.end()), g(gf.begin(), gf.end()), b(bf.begin(), bf.end());
  std::vector<double> y, mean, var;
  bn_reference(x, g, b, N, C, HW, eps, y, mean, var);

  DeviceBuffer<float> dx(xf), ddy(dyf), dg(gf), db(bf), dyo(n), sm(C), si(C), dxg(n), dgam(C), dbet(C);
  DeviceBuffer<float> rm(std::vector<float>(C, 0.0f)), rv(std::vector<float>(C, 1.0f));
  launch_batch_norm_forward_train(dx.ptr, dg.ptr, db.ptr, N, C, HW, eps, momentum, rm.ptr, rv.ptr, dyo.ptr, sm.ptr, si.ptr);
  t.close("batch_norm forward (train) (4,3,10)", dyo.to_host(), std::vector<float>(y.begin(), y.end()), 1e-5, 1e-5);
  std::vector<float> want_rm(C), want_rv(C);
  for (int64_t c = 0; c < C; ++c) {
    want_rm[c] = float(momentum * mean[c]);
    want_rv[c] = float((1 - momentum) + momentum * var[c] * (N * HW) / (N * HW - 1.0));
  }
  t.close("batch_norm running_mean", rm.to_host(), want_rm, 1e-6, 1e-5);
  t.close("batch_norm running_var (unbiased)", rv.to_host(), want_rv, 1e-6, 1e-5);

  // Backward vs central differences of L(x, gamma, beta) = Σ dy · y in F64.
  auto loss = [&](const std::vector<double>& xx, const std::vector<double>& gg, const std::vector<double>& bb) {
    std::vector<double> yy, mm, vv;
    bn_reference(xx, gg, bb, N, C, HW, eps, yy, mm, vv);
    double L = 0;
    for (int64_t i = 0; i < n; ++i) L += dy[i] * yy[i];
    return L;
  };
  const double h = 1e-6;
  std::vector<float> want_dx(n), want_dg(C), want_db(C);
  for (int64_t i = 0; i < n; ++i) {
    auto xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    want_dx[i] = float((loss(xp, g, b) - loss(xm, g, b)) / (2 * h));
  }
  for (int64_t c = 0; c < C; ++c) {
    auto gp = g, gm = g, bp = b, bm = b;
    gp[c] += h; gm[c] -= h; bp[c] += h; bm[c] -= h;
    want_dg[c] = float((loss(x, gp, b) - loss(x, gm, b)) / (2 * h));
    want_db[c] = float((loss(x, g, bp) - loss(x, g, bm)) / (2 * h));
  }
  launch_batch_norm_backward(ddy.ptr, dx.ptr, dg.ptr, sm.ptr, si.ptr, N, C, HW, dxg.ptr, dgam.ptr, dbet.ptr);
  t.close("batch_norm backward dx vs finite differences", dxg.to_host(), want_dx, 1e-4, 1e-3);
  t.close("batch_norm backward dgamma", dgam.to_host(), want_dg, 1e-4, 1e-3);
  t.close("batch_norm backward dbeta", dbet.to_host(), want_db, 1e-4, 1e-3);

  // Eval mode with given running statistics.
  launch_batch_norm_forward_eval(dx.ptr, dg.ptr, db.ptr, rm.ptr, rv.ptr, N, C, HW, eps, dyo.ptr);
  std::vector<float> want_eval(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = (i / HW) % C;
    want_eval[i] = float(g[c] * (x[i] - want_rm[c]) / std::sqrt(want_rv[c] + eps) + b[c]);
  }
  t.close("batch_norm forward (eval)", dyo.to_host(), want_eval, 1e-5, 1e-5);
  // What the eval-mode backward uses: 1/√(running_var + eps) in double, rounded once, as the CPU.
  DeviceBuffer<float> invstd(C);
  launch_batch_norm_invstd(rv.ptr, C, eps, invstd.ptr);
  std::vector<float> want_invstd(C);
  const std::vector<float> rv_host = rv.to_host();
  for (int64_t c = 0; c < C; ++c) want_invstd[c] = float(1.0 / std::sqrt(double(rv_host[c]) + double(eps)));
  t.exact("batch_norm invstd of the running variance", invstd.to_host(), want_invstd);
}

void test_optimizers(hg::test::Checker& t) {
  const int64_t n = 777;
  const auto p0 = uniform(n, -1, 1, 11), g1 = uniform(n, -1, 1, 12), g2 = uniform(n, -1, 1, 13);
  for (DType dt : hg::test::kAllDtypes) {
    // SGD, momentum 0.9, dampening 0.1, weight decay 0.01, Nesterov; two steps.
    const auto p = round_to(dt, p0), ga = round_to(dt, g1), gb = round_to(dt, g2);
    Typed dp(dt, p), dga(dt, ga), dgb(dt, gb);
    DeviceBuffer<float> buf(n);
    const float lr = 0.1f, mom = 0.9f, damp = 0.1f, wd = 0.01f;
    launch_sgd_step(dt, dp.ptr(), dga.ptr(), buf.ptr, n, lr, mom, damp, wd, true, true);
    std::vector<float> pr = p, b(n);
    for (int64_t i = 0; i < n; ++i) {
      const double g = ga[i] + wd * double(pr[i]);
      b[i] = float(g);
      pr[i] = round_to(dt, float(pr[i] - lr * (g + mom * g)));
    }
    const std::vector<float> p_after1 = dp.to_host();
    t.close(tag("sgd (momentum, dampening, wd, nesterov) step 1", dt), p_after1, pr, 1e-6, storage_rtol(dt));
    launch_sgd_step(dt, dp.ptr(), dgb.ptr(), buf.ptr, n, lr, mom, damp, wd, true, false);
    for (int64_t i = 0; i < n; ++i) {
      const double g = gb[i] + wd * double(p_after1[i]);  // continue from the GPU's step 1
      const double bb = mom * b[i] + (1 - damp) * g;
      pr[i] = round_to(dt, float(p_after1[i] - lr * (g + mom * bb)));
    }
    t.close(tag("sgd (momentum, dampening, wd, nesterov) step 2", dt), dp.to_host(), pr, 1e-6, storage_rtol(dt));

    // Adam and AdamW: three steps on the same gradient.
    for (bool decoupled : {false, true}) {
      Typed ap(dt, p);
      DeviceBuffer<float> m(std::vector<float>(n, 0.0f)), v(std::vector<float>(n, 0.0f));
      const float alr = 0.01f, b1 = 0.9f, b2 = 0.999f, aeps = 1e-8f, awd = 0.1f;
      std::vector<double> rp(p.begin(), p.end()), rm(n, 0), rv(n, 0);
      for (int step = 1; step <= 3; ++step) {
        launch_adam_step(dt, ap.ptr(), dga.ptr(), m.ptr, v.ptr, n, alr, b1, b2, aeps, awd, decoupled, step);
        for (int64_t i = 0; i < n; ++i) {
          double g = ga[i], pi = rp[i];
          if (decoupled) pi *= 1 - alr * awd;
          else g += awd * pi;
          rm[i] = b1 * rm[i] + (1 - b1) * g;
          rv[i] = b2 * rv[i] + (1 - b2) * g * g;
          const double mh = rm[i] / (1 - std::pow(b1, step)), vh = rv[i] / (1 - std::pow(b2, step));
          rp[i] = round_to(dt, float(pi - alr * mh / (std::sqrt(vh) + aeps)));
        }
      }
      t.close(tag(decoupled ? "adamw 3 steps" : "adam (L2) 3 steps", dt), ap.to_host(),
              std::vector<float>(rp.begin(), rp.end()), dt == DType::F32 ? 1e-6 : 2e-3, storage_rtol(dt));
    }
  }
}

void run(hg::test::Checker& t) {
  test_softmax(t);
  test_cross_entropy(t);
  test_im2col(t);
  test_conv_swaps(t);
  test_pooling(t);
  test_batch_norm(t);
  test_optimizers(t);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
