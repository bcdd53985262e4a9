// Grades the chapter 02 exercise (linear_backward in exercise.cpp).
//
// For a few shapes, with random F64 inputs, the student's dX, dW, db are compared with
//   1. finite differences of the forward pass (the ground truth, needs no backward at all):
//      for L = Σ dY ⊙ Y(X, W, b), ∂L/∂θ ≈ (L(θ + h) − L(θ − h)) / 2h for every number θ,
//   2. and, for a second opinion, the engine's own linear op run through autograd.
// It prints what is right and what is wrong in plain words, and exits 0 only when all pass.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/ops/ops.h"
#include "lessons/02_fp32_training/exercise.h"

using hg::Tensor;

namespace {

// L = Σ dY ⊙ (X·Wᵀ + b), in plain loops over doubles.
double weighted_output(const std::vector<double>& x, const std::vector<double>& w,
                       const std::vector<double>& b, const std::vector<double>& dy, int64_t n,
                       int64_t in, int64_t out) {
  double L = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double y = b[o];
      for (int64_t i = 0; i < in; ++i) y += x[r * in + i] * w[o * in + i];
      L += dy[r * out + o] * y;
    }
  return L;
}

struct Verdict {
  bool ok = true;
  std::string text;
};

// Compares one gradient; says what is wrong if it is.
Verdict judge(const char* name, const hg::Shape& want_shape, const Tensor& got,
              const std::vector<double>& numeric, const char* hint) {
  Verdict v;
  char buf[512];
  if (!got.defined()) {
    v.ok = false;
    std::snprintf(buf, sizeof buf, "  %s: not computed (the tensor is empty). %s\n", name, hint);
    v.text = buf;
    return v;
  }
  if (got.shape() != want_shape) {
    v.ok = false;
    v.text = std::string("  ") + name + ": has shape " + hg::shape_str(got.shape()) + ", should be " +
             hg::shape_str(want_shape) + " (a gradient has the shape of what it is the gradient of). " + hint + "\n";
    return v;
  }
  const std::vector<double> g = got.to_double_vector();
  double worst = 0;
  size_t at = 0;
  bool all_zero = true;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i] != 0) all_zero = false;
    const double d = std::fabs(g[i] - numeric[i]) / (1e-7 + 1e-6 * std::fabs(numeric[i]));
    if (!(d <= worst)) worst = d, at = i;
  }
  if (worst <= 1.0) {
    std::snprintf(buf, sizeof buf, "  %s: correct (max |difference| from finite differences %.1e)\n", name,
                  std::fabs(g[at] - numeric[at]));
    v.text = buf;
    return v;
  }
  v.ok = false;
  if (all_zero) {
    std::snprintf(buf, sizeof buf, "  %s: all zeros — still the TODO? %s\n", name, hint);
  } else {
    std::snprintf(buf, sizeof buf,
                  "  %s: wrong. Element %zu is %.6f, finite differences say %.6f. %s\n", name, at,
                  g[at], numeric[at], hint);
  }
  v.text = buf;
  return v;
}

}  // namespace

int main() {
  std::printf("Checking linear_backward (exercise.cpp) against finite differences in F64\n\n");
  struct Case { int64_t n, in, out; };
  const Case cases[] = {{1, 1, 1}, {3, 4, 2}, {5, 2, 6}, {8, 16, 10}};
  bool all_ok = true;
  hg::Generator gen(2024);
  const double h = 1e-6;
  for (const Case& c : cases) {
    Tensor x = Tensor::randn({c.n, c.in}, gen, hg::DType::F64);
    Tensor w = Tensor::randn({c.out, c.in}, gen, hg::DType::F64);
    Tensor b = Tensor::randn({c.out}, gen, hg::DType::F64);
    Tensor dy = Tensor::randn({c.n, c.out}, gen, hg::DType::F64);
    std::printf("N = %lld, in = %lld, out = %lld\n", (long long)c.n, (long long)c.in, (long long)c.out);

    LinearGrads g;
    try {
      g = linear_backward(x.clone(), w.clone(), dy.clone());
    } catch (const std::exception& e) {
      std::printf("  your linear_backward threw: %s\n\n", e.what());
      all_ok = false;
      continue;
    }

    // Finite differences of L = Σ dY ⊙ Y for every number of X, W and b.
    std::vector<double> xv = x.to_double_vector(), wv = w.to_double_vector(), bv = b.to_double_vector(),
                        dyv = dy.to_double_vector();
    auto numeric = [&](std::vector<double>& theta) {
      std::vector<double> out(theta.size());
      for (size_t i = 0; i < theta.size(); ++i) {
        const double keep = theta[i];
        theta[i] = keep + h;
        const double up = weighted_output(xv, wv, bv, dyv, c.n, c.in, c.out);
        theta[i] = keep - h;
        const double down = weighted_output(xv, wv, bv, dyv, c.n, c.in, c.out);
        theta[i] = keep;
        out[i] = (up - down) / (2 * h);
      }
      return out;
    };
    const std::vector<double> nx = numeric(xv), nw = numeric(wv), nb = numeric(bv);

    const Verdict vx = judge("dX", {c.n, c.in}, g.dx, nx,
                             "Hint: dX[n][i] = sum over o of dY[n][o] * W[o][i], i.e. dY · W.");
    const Verdict vw = judge("dW", {c.out, c.in}, g.dw, nw,
                             "Hint: dW[o][i] = sum over the batch n of dY[n][o] * X[n][i], i.e. dYᵀ · X.");
    const Verdict vb = judge("db", {c.out}, g.db, nb,
                             "Hint: b is added to every row, so db sums dY over the rows (the batch).");
    std::printf("%s%s%s", vx.text.c_str(), vw.text.c_str(), vb.text.c_str());
    all_ok = all_ok && vx.ok && vw.ok && vb.ok;

    // Second opinion: the engine's linear op through autograd must say the same as finite
    // differences (if not, the bug is in the engine, not in your code).
    Tensor xr = x.clone(), wr = w.clone(), br = b.clone();
    xr.requires_grad_(true), wr.requires_grad_(true), br.requires_grad_(true);
    hg::linear(xr, wr, br).backward(dy);
    const Verdict ex = judge("engine dX", {c.n, c.in}, xr.grad(), nx, "");
    const Verdict ew = judge("engine dW", {c.out, c.in}, wr.grad(), nw, "");
    const Verdict eb = judge("engine db", {c.out}, br.grad(), nb, "");
    if (!(ex.ok && ew.ok && eb.ok)) {
      std::printf("  (the engine's own linear backward disagrees with finite differences:\n%s%s%s"
                  "   that is a bug in framework/ops, not in your exercise)\n",
                  ex.text.c_str(), ew.text.c_str(), eb.text.c_str());
    }
    std::printf("\n");
  }
  std::printf(all_ok ? "PASS: your linear backward is right for every shape.\n"
                     : "NOT YET: fix what is marked above, rebuild, and run ./lab check 02 again.\n");
  return all_ok ? 0 : 1;
}
