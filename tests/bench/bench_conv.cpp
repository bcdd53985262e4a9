// bench_conv — conv2d two ways, on chapter 02's SmallCNN layers (batch 128), same threads:
//
//   per-image  hg::cpu::conv2d_forward/backward: im2col + GEMM one image at a time, images
//              over the threads (what ops/conv2d uses; framework/cpu/conv2d.h)
//   batched    one im2col of the whole batch into (CKK, N·P), one large GEMM, then a
//              transpose to (N, F, P) — the textbook formulation, kept here for comparison
//
//   bench_conv [--threads 2] [--min-time 0.5]
//
// Both are checked against each other before they are timed.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <vector>

#include "framework/cpu/conv2d.h"
#include "framework/cpu/gemm.h"
#include "framework/cpu/im2col.h"

namespace {

using hg::ConvGeometry;

// y (N, F, P) = W · cols (CKK, N·P) + b, then (F, N, P) -> (N, F, P)
void batched_forward(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t F,
                     const ConvGeometry& g) {
  const int64_t P = g.positions(), NP = N * P, CKK = g.patch();
  std::vector<float> cols(size_t(CKK * NP)), out(size_t(F * NP));
  hg::cpu::im2col_batch(x, N, g, cols.data());
  hg::cpu::sgemm(false, false, F, NP, CKK, 1.f, w, CKK, cols.data(), NP, 0.f, out.data(), NP);
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t p = 0; p < P; ++p) y[(n * F + f) * P + p] = out[size_t(f * NP + n * P + p)] + b[f];
}

// dW = dY (F, N·P) · colsᵀ, dcols = Wᵀ · dY, dx = col2im(dcols)
void batched_backward(const float* x, const float* w, const float* dy, float* dx, float* dw, int64_t N,
                      int64_t F, const ConvGeometry& g) {
  const int64_t P = g.positions(), NP = N * P, CKK = g.patch();
  std::vector<float> dyp(size_t(F * NP)), cols(size_t(CKK * NP));
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t p = 0; p < P; ++p) dyp[size_t(f * NP + n * P + p)] = dy[(n * F + f) * P + p];
  hg::cpu::im2col_batch(x, N, g, cols.data());
  hg::cpu::sgemm(false, true, F, CKK, NP, 1.f, dyp.data(), NP, cols.data(), NP, 0.f, dw, CKK);
  if (dx) {
    hg::cpu::sgemm(true, false, CKK, NP, F, 1.f, w, CKK, dyp.data(), NP, 0.f, cols.data(), NP);
    hg::cpu::col2im_batch(cols.data(), N, g, dx);
  }
}

std::vector<double> best_ms(const std::vector<std::function<void()>>& runs, double min_time) {
  for (const auto& run : runs) run();
  std::vector<double> best(runs.size(), 1e30);
  double total = 0;
  for (int round = 0; round < 3 || total < min_time * double(runs.size()); ++round)
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      runs[i]();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best[i] = std::min(best[i], s * 1e3);
      total += s;
    }
  return best;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) scale = std::max(scale, double(std::fabs(b[i])));
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
  return m / (scale + 1e-30);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"conv2d per image vs batched, chapter 02's SmallCNN layers"};
  int threads = 2;
  double min_time = 0.5;
  app.add_option("--threads", threads, "OpenMP threads")->check(CLI::Range(1, 256));
  app.add_option("--min-time", min_time, "seconds of timing per entry (best repetition is kept)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  omp_set_num_threads(threads);
  std::printf("threads: %d   gemm kernel: %s   batch 128, times in ms (best repetition)\n\n", threads,
              hg::cpu::gemm_kernel_name());
  std::printf("%-26s %12s %12s %12s %12s\n", "layer", "fwd batched", "fwd per-img", "bwd batched", "bwd per-img");

  struct Layer {
    const char* name;
    int64_t C, HW, F;
    bool needs_dx;
  };
  const Layer layers[] = {{"conv1 1->32, 28x28", 1, 28, 32, false}, {"conv2 32->64, 14x14", 32, 14, 64, true}};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  int status = 0;
  for (const Layer& L : layers) {
    ConvGeometry g;
    g.C = L.C, g.H = g.W = L.HW, g.KH = g.KW = 3, g.pad_h = g.pad_w = 1;
    const int64_t N = 128, F = L.F, P = g.positions(), CKK = g.patch(), image = g.C * g.H * g.W;
    std::vector<float> x(size_t(N * image)), w(size_t(F * CKK)), b(static_cast<size_t>(F)), dy(size_t(N * F * P));
    for (auto* v : {&x, &w, &b, &dy})
      for (auto& e : *v) e = U(rng);
    std::vector<float> y1(dy.size()), y2(dy.size()), dx1(x.size()), dx2(x.size()), dw1(w.size()), dw2(w.size()),
        db(b.size());
    float* dx1p = L.needs_dx ? dx1.data() : nullptr;
    float* dx2p = L.needs_dx ? dx2.data() : nullptr;
    auto fwd_b = [&] { batched_forward(x.data(), w.data(), b.data(), y1.data(), N, F, g); };
    auto fwd_i = [&] { hg::cpu::conv2d_forward(x.data(), w.data(), b.data(), y2.data(), N, F, g); };
    auto bwd_b = [&] { batched_backward(x.data(), w.data(), dy.data(), dx1p, dw1.data(), N, F, g); };
    auto bwd_i = [&] { hg::cpu::conv2d_backward(x.data(), w.data(), dy.data(), dx2p, dw2.data(), db.data(), N, F, g); };
    fwd_b(), fwd_i(), bwd_b(), bwd_i();
    const double d = std::max({max_rel_diff(y1, y2), max_rel_diff(dw1, dw2), max_rel_diff(dx1, dx2)});
    if (d > 1e-4) {
      std::printf("%-26s the two ways disagree (max relative difference %.3g): not timed\n", L.name, d);
      status = 1;
      continue;
    }
    const std::vector<double> ms = best_ms({fwd_b, fwd_i, bwd_b, bwd_i}, min_time);
    std::printf("%-26s %12.1f %12.1f %12.1f %12.1f\n", L.name, ms[0], ms[1], ms[2], ms[3]);
  }
  return status;
}
