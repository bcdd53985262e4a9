// Grades the chapter 02 exercise (linear_backward in exercise.cpp).
//
// For several shapes, with random F64 inputs drawn from this grading's seed, the learner's
// dX, dW, db are compared with
// finite differences of the forward pass (the ground truth, needs no backward at all):
// for L = Σ dY ⊙ Y(X, W, b), ∂L/∂θ ≈ (L(θ + h) − L(θ − h)) / 2h for every number θ.
// One check per gradient, over every shape; a wrong one is compared with the usual wrong
// turns (a transposed shape, a mean where the batch adds up) to say which.
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "framework/ops/ops.h"
#include "lessons/02_fp32_training/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using hg::Tensor;

namespace {

struct Case {
  int64_t n, in, out;
};
const Case kCases[] = {{1, 1, 1}, {3, 4, 2}, {5, 2, 6}, {8, 16, 10}};

// L = Σ dY ⊙ (X·Wᵀ + b), in plain loops over doubles.
double weighted_output(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                       const std::vector<double>& dy, const Case& c) {
  double L = 0;
  for (int64_t r = 0; r < c.n; ++r)
    for (int64_t o = 0; o < c.out; ++o) {
      double y = b[o];
      for (int64_t i = 0; i < c.in; ++i) y += x[r * c.in + i] * w[o * c.in + i];
      L += dy[r * c.out + o] * y;
    }
  return L;
}

struct Problem {
  Case c;
  Tensor x, w, b, dy;
  std::vector<double> nx, nw, nb;  // finite differences for X, W, b
  LinearGrads got;
};

Problem make_problem(const Case& c, hg::Generator& gen) {
  Problem p{c, Tensor::randn({c.n, c.in}, gen, hg::DType::F64), Tensor::randn({c.out, c.in}, gen, hg::DType::F64),
            Tensor::randn({c.out}, gen, hg::DType::F64), Tensor::randn({c.n, c.out}, gen, hg::DType::F64),
            {}, {}, {}, {}};
  std::vector<double> xv = p.x.to_double_vector(), wv = p.w.to_double_vector(), bv = p.b.to_double_vector(),
                      dyv = p.dy.to_double_vector();
  const double h = 1e-6;
  auto numeric = [&](std::vector<double>& theta) {
    std::vector<double> out(theta.size());
    for (size_t i = 0; i < theta.size(); ++i) {
      const double keep = theta[i];
      theta[i] = keep + h;
      const double up = weighted_output(xv, wv, bv, dyv, c);
      theta[i] = keep - h;
      const double down = weighted_output(xv, wv, bv, dyv, c);
      theta[i] = keep;
      out[i] = (up - down) / (2 * h);
    }
    return out;
  };
  p.nx = numeric(xv);
  p.nw = numeric(wv);
  p.nb = numeric(bv);
  return p;
}

bool matches(const std::vector<double>& got, const std::vector<double>& want, double factor = 1.0) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - factor * want[i]) <= 1e-7 + 1e-6 * std::fabs(factor * want[i]))) return false;
  return true;
}

// One gradient of one problem: "" when right.
std::string judge(const char* name, const char* of, const hg::Shape& want_shape, const Tensor& got,
                  const std::vector<double>& numeric, const Case& c) {
  const std::string where = format("(N = %lld, in = %lld, out = %lld) ", (long long)c.n, (long long)c.in,
                                   (long long)c.out);
  if (!got.defined()) return where + name + " was not computed (an empty tensor).";
  if (got.shape() != want_shape) {
    std::string s = where + format("%s has shape %s; %s has shape %s, and a gradient always has the shape of "
                                   "what it is the gradient of: one number per number of %s.",
                                   name, hg::shape_str(got.shape()).c_str(), of,
                                   hg::shape_str(want_shape).c_str(), of);
    if (got.shape().size() == 2 && want_shape.size() == 2 && got.shape()[0] == want_shape[1] &&
        got.shape()[1] == want_shape[0])
      s += "\nYours is transposed: its rows and columns are swapped.";
    return s;
  }
  const std::vector<double> g = got.to(hg::DType::F64).to_double_vector();
  if (matches(g, numeric)) return "";
  bool all_zero = true;
  for (double v : g) all_zero = all_zero && v == 0;
  if (all_zero)
    return where + format("%s is all zeros: still the TODO. Each number of %s moves some outputs Y[n][o]; "
                          "the loss feels it through each of them, weighted by dY.", name, of);
  if (c.n > 1 && matches(g, numeric, 1.0 / double(c.n)))
    return where + format("%s is %lld times too small: you averaged over the batch. Every row n of the "
                          "batch uses the same %s, and the loss (here Σ dY ⊙ Y) feels it through every row: "
                          "the contributions add up. (Averaging over the batch belongs to the loss, which "
                          "already put 1/N into dY.)", name, (long long)c.n, of);
  size_t at = 0;
  double worst = -1;
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = std::fabs(g[i] - numeric[i]) / (1e-7 + 1e-6 * std::fabs(numeric[i]));
    if (!(d <= worst)) worst = d, at = i;
  }
  return where + format("%s is wrong: element %zu is %.6f, finite differences say %.6f. Write Y[n][o] out "
                        "as a sum and find every term in which that number of %s appears.",
                        name, at, g[at], numeric[at], of);
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"02", "the backward pass of a linear layer", "02_fp32_training", "Exercise"}, argc, argv);
  // The engine's ops compute the three products; what must not run is autograd, which would
  // apply the engine's own backward of each (any way into it: a tensor that records its ops,
  // the backward pass, the gradients it leaves, the nodes of the graph).
  g.own_code_only({{"hg::linear", "the engine's linear op, whose backward autograd would run"},
                   {"hg::nn::", "the engine's layers, whose backward autograd would run"},
                   {"hg::Tensor::backward", "autograd, which runs the engine's own linear backward"},
                   {"hg::run_backward", "autograd, which runs the engine's own backward of every op"},
                   {"hg::Tensor::requires_grad_", "autograd, which records the ops for their backward"},
                   {"hg::Tensor::grad", "the gradient autograd leaves"},
                   {"hg::Tensor::grad_fn", "the autograd graph, whose nodes hold the engine's backward"},
                   {"hg::Node", "the autograd graph, whose nodes hold the engine's backward"}});
  hg::Generator gen(g.seed_for(1));
  std::vector<Problem> problems;
  for (const Case& c : kCases) problems.push_back(make_problem(c, gen));
  // The learner's gradients for every shape, in one child, at the first check; a failure
  // there fails all three.
  bool ran = false;
  std::string error;
  auto learner_grads = [&] {
    if (std::exchange(ran, true)) return;
    try {
      const auto grads = grader::sized(g.run([&] {
        std::vector<std::tuple<Tensor, Tensor, Tensor>> out;
        for (const Problem& p : problems) {
          const LinearGrads got = linear_backward(p.x.clone(), p.w.clone(), p.dy.clone());
          out.emplace_back(got.dx, got.dw, got.db);
        }
        return out;
      }), problems.size());
      for (size_t i = 0; i < problems.size(); ++i) {
        const auto& [dx, dw, db] = grads[i];
        problems[i].got = {dx, dw, db};
      }
    } catch (const grader::Failed& e) {
      error = e.what();
      if (e.timed_out()) throw;  // the checks after it are not run
    }
  };
  auto over_all_shapes = [&](auto judge_one) -> std::string {
    learner_grads();
    if (!error.empty()) return error;
    for (const Problem& p : problems) {
      const std::string why = judge_one(p);
      if (!why.empty()) return why;
    }
    return "";
  };
  g.check("dX, for four shapes", [&] {
    return over_all_shapes([](const Problem& p) { return judge("dX", "X", {p.c.n, p.c.in}, p.got.dx, p.nx, p.c); });
  });
  g.check("dW, for four shapes", [&] {
    return over_all_shapes([](const Problem& p) { return judge("dW", "W", {p.c.out, p.c.in}, p.got.dw, p.nw, p.c); });
  });
  g.check("db, for four shapes", [&] {
    return over_all_shapes([](const Problem& p) { return judge("db", "b", {p.c.out}, p.got.db, p.nb, p.c); });
  });
  return g.finish();
}
