// Chapter 01 — tensors and autograd.
//
// One small computation, three ways to get its gradient, and the check that they agree:
//
//   x (N, K) input        W (K, M) weight        b (M) bias          N = 4, K = 3, M = 2
//   Z = x·W + b           (N, M)   b is broadcast over the N rows
//   A = tanh(Z)           (N, M)
//   L = mean(A²)          ()       a scalar "loss": (1 / (N·M)) Σ A²
//
//   1. by hand    — the chain rule, written out below as plain loops over doubles
//   2. autograd   — L.backward() walks the recorded graph in reverse
//   3. numerically — finite differences: ∂L/∂θ ≈ (L(θ + h) − L(θ − h)) / 2h for every θ
//
// Everything is F64 here, so the three agree to ~1e-10 and any bug would stand out.
//
// Sections: 1. build the tensors   2. forward, and the graph it recorded   3. autograd
//           4. by hand             5. finite differences                  6. compare
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "framework/autograd/graph_print.h"
#include "framework/cpu/wait_policy.h"
#include "framework/io/atomic_file.h"
#include "framework/ops/ops.h"
#include "framework/tensor/tensor.h"
#include "framework/train/cli.h"

using hg::Tensor;

namespace {

constexpr int64_t N = 4, K = 3, M = 2;

// The forward pass as tensor ops: each call records a node of the graph.
Tensor loss_of(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor z = hg::add(hg::matmul(x, w), b);  // (N, M)
  Tensor a = hg::tanh(z);                   // (N, M)
  return hg::mean(hg::mul(a, a));           // ()
}

// The same function with plain loops (for the finite differences, where we change one
// number at a time and need nothing recorded).
double loss_plain(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b) {
  double sum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      double z = b[m];
      for (int64_t k = 0; k < K; ++k) z += x[n * K + k] * w[k * M + m];
      const double a = std::tanh(z);
      sum += a * a;
    }
  return sum / (N * M);
}

// The larger of two differences, where NaN is the largest of all: a NaN anywhere means the
// gradients cannot be compared, and the verdict must say NOT OK. (std::max(d, NaN) returns
// d — every comparison with NaN is false — and would quietly drop it.)
double worse(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = worse(d, std::fabs(a[i] - b[i]));
  return d;
}

// The last line. When finite differences miss the 1e-8 tolerance but by hand and autograd
// agree and the miss is within what this h costs (h² truncation + ε/h rounding), the step
// size is to blame, not a backward: say so, with the numbers.
std::string verdict(bool agree, double hand_vs_auto, double auto_vs_fd, double h) {
  if (agree) return "OK: the three gradients agree";
  const double truncation = h * h, rounding = std::numeric_limits<double>::epsilon() / h;
  if (hand_vs_auto < 1e-12 && auto_vs_fd <= truncation + rounding) {
    const bool too_big = truncation >= rounding;
    char text[400];
    std::snprintf(text, sizeof text,
                  "NOT OK at this h: finite differences are off by %.3g, within their own %s error at h = %g "
                  "(%s %.3g); by hand and autograd agree, so the backward is fine. The error is smallest "
                  "near h = 1e-5 (the default)",
                  auto_vs_fd, too_big ? "truncation" : "rounding", h, too_big ? "h^2 =" : "eps/h =",
                  too_big ? truncation : rounding);
    return text;
  }
  return "NOT OK: the gradients disagree (a bug in an op's backward?)";
}

// Each number of `params` nudged by +h and -h in turn: (L(p+h) - L(p-h)) / 2h, one loss per nudge.
std::vector<double> central_differences(std::vector<double> params, double h,
                                        const std::function<double(const std::vector<double>&)>& loss) {
  std::vector<double> grad(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const double keep = params[i];
    params[i] = keep + h;
    const double up = loss(params);
    params[i] = keep - h;
    const double down = loss(params);
    params[i] = keep;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

void print_row(const char* what, const std::vector<double>& v) {
  std::printf("  %-14s", what);
  for (double x : v) std::printf(" %+.10f", x);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  hg::set_omp_wait_policy(argv);  // idle threads sleep, also when run directly (wait_policy.h)
  CLI::App app{"halfgrad chapter 01: a small graph, its gradient by hand, by autograd and by finite differences"};
  uint64_t seed = 0;
  double h = 1e-5;  // near the smallest error: see section 5
  std::string dot_path;
  app.add_option("--seed", seed, "seed of the random inputs")->capture_default_str()
      ->check(hg::train::WholeIn(0, hg::train::kMaxWhole, "a seed from 0 to 2^63-1"));
  app.add_option("--h", h, "finite-difference step")->capture_default_str()->check(hg::train::Positive());
  app.add_option("--dot", dot_path, "also write the graph for Graphviz to this file (dot -Tpng FILE -o graph.png)")
      ->check(hg::train::WritableFile());
  HG_PARSE_FLAGS(app, argc, argv);  // a bad flag: one line, exit code 2

  // ---- 1. build the tensors ------------------------------------------------------------
  hg::Generator gen(seed);
  Tensor x = Tensor::randn({N, K}, gen, hg::DType::F64).set_name("x");
  Tensor w = Tensor::randn({K, M}, gen, hg::DType::F64).set_name("W");
  Tensor b = Tensor::randn({M}, gen, hg::DType::F64).set_name("b");
  w.requires_grad_(true);  // we want ∂L/∂W and ∂L/∂b; x is data, no gradient
  b.requires_grad_(true);
  std::printf("== 1. tensors\n%s\n%s\n%s\n\n", x.str().c_str(), w.str().c_str(), b.str().c_str());

  // ---- 2. forward: the ops run now, and each one records a node ------------------------
  Tensor loss = loss_of(x, w, b).set_name("loss");
  std::printf("== 2. forward: L = mean(tanh(x·W + b)^2) = %.12f\n", loss.item());
  std::printf("the graph autograd recorded (one line per op, in the order they ran):\n%s\n",
              hg::graph_to_text(loss).c_str());
  if (!dot_path.empty()) {
    try {  // the whole file or none: every write, the flush to disk and the rename are checked
      hg::io::write_file_atomic(dot_path, hg::graph_to_dot(loss));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lesson_01: --dot: %s\n", e.what());
      return 1;
    }
    std::printf("(graph written to %s)\n\n", dot_path.c_str());
  }

  // ---- 3. autograd: walk the graph backwards, accumulating into .grad ------------------
  loss.backward();
  const std::vector<double> auto_w = w.grad().to_double_vector(), auto_b = b.grad().to_double_vector();

  // ---- 4. by hand: the chain rule, one line per op, in reverse ------------------------
  //   L = (1/NM) Σ A²        ->  dL/dA = 2A / (N·M)
  //   A = tanh(Z)            ->  dL/dZ = dL/dA · (1 − A²)        (tanh' = 1 − tanh²)
  //   Z = x·W + b            ->  dL/dW = xᵀ · dL/dZ   (K, M)
  //                              dL/db = Σ_n dL/dZ[n]  (M): b was copied to every row,
  //                                                         so its gradient sums the rows
  const std::vector<double> xv = x.to_double_vector(), wv = w.to_double_vector(), bv = b.to_double_vector();
  std::vector<double> hand_w(K * M, 0.0), hand_b(M, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      double z = bv[m];
      for (int64_t k = 0; k < K; ++k) z += xv[n * K + k] * wv[k * M + m];
      const double a = std::tanh(z);
      const double dA = 2.0 * a / (N * M);
      const double dZ = dA * (1.0 - a * a);
      for (int64_t k = 0; k < K; ++k) hand_w[k * M + m] += xv[n * K + k] * dZ;
      hand_b[m] += dZ;
    }

  // ---- 5. finite differences: nudge each number, watch the loss ------------------------
  // Central differences have error O(h²) from the Taylor series (truncation) plus O(ε/h)
  // from rounding (ε ≈ 2.2e-16 in F64). They balance where h³ ≈ ε, h ≈ 6e-6; on this graph
  // a sweep of --h puts the smallest error at h = 1e-5 (2.2e-11; 1e-6 gives 3.9e-11).
  const std::vector<double> fd_w =
      central_differences(wv, h, [&](const std::vector<double>& p) { return loss_plain(xv, p, bv); });
  const std::vector<double> fd_b =
      central_differences(bv, h, [&](const std::vector<double>& p) { return loss_plain(xv, wv, p); });

  // ---- 6. compare ----------------------------------------------------------------------
  std::printf("== 3-5. the gradient three ways\n");
  std::printf("dL/dW (%lld x %lld, row-major):\n", (long long)K, (long long)M);
  print_row("by hand", hand_w);
  print_row("autograd", auto_w);
  print_row("finite diff.", fd_w);
  std::printf("dL/db (%lld):\n", (long long)M);
  print_row("by hand", hand_b);
  print_row("autograd", auto_b);
  print_row("finite diff.", fd_b);

  const double hand_vs_auto = worse(max_abs_diff(hand_w, auto_w), max_abs_diff(hand_b, auto_b));
  const double auto_vs_fd = worse(max_abs_diff(auto_w, fd_w), max_abs_diff(auto_b, fd_b));
  std::printf("\n== 6. agreement (max |difference|)\n");
  std::printf("  by hand  vs autograd:     %.3e   (same formula, different order of operations)\n", hand_vs_auto);
  std::printf("  autograd vs finite diff.: %.3e   (finite differences are approximate: O(h^2) + O(eps/h))\n", auto_vs_fd);
  const bool agree = hand_vs_auto < 1e-12 && auto_vs_fd < 1e-8;  // false for NaN, as it must be
  std::printf("%s\n", verdict(agree, hand_vs_auto, auto_vs_fd, h).c_str());
  return agree ? 0 : 1;
}
