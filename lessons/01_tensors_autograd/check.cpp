// Grades the chapter 01 exercise (softmax_backward in exercise.cpp).
//
// For several shapes, on inputs drawn from this grading's seed, the learner's dx is compared
// with finite differences of the forward pass, the ground truth that needs no backward code
// at all:
//   L(x) = Σ dy ⊙ softmax(x)      ∂L/∂x[i] ≈ (L(x + h·e_i) − L(x − h·e_i)) / 2h,  h = 1e-6, F64
// When it is wrong, the answer is compared with the mistakes one makes on the way (only
// the diagonal of the Jacobian, a missing factor, a sign, rows mixed up) to say which.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "lessons/01_tensors_autograd/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using Matrix = std::vector<double>;  // (R, C) row-major

namespace {

Matrix softmax(const Matrix& x, int64_t rows, int64_t cols) {
  Matrix y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = x[r * cols];
    for (int64_t c = 1; c < cols; ++c) m = std::max(m, x[r * cols + c]);
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += y[r * cols + c] = std::exp(x[r * cols + c] - m);
    for (int64_t c = 0; c < cols; ++c) y[r * cols + c] /= s;
  }
  return y;
}

// ∂L/∂x by central differences, L = Σ dy ⊙ softmax(x).
Matrix finite_differences(Matrix x, const Matrix& dy, int64_t rows, int64_t cols) {
  const double h = 1e-6;
  auto loss = [&](const Matrix& at) {
    const Matrix y = softmax(at, rows, cols);
    double L = 0;
    for (size_t i = 0; i < y.size(); ++i) L += dy[i] * y[i];
    return L;
  };
  Matrix g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + h;
    const double up = loss(x);
    x[i] = keep - h;
    const double down = loss(x);
    x[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

bool close(const Matrix& got, const Matrix& want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-7 + 1e-6 * std::fabs(want[i]))) return false;
  return true;
}

// The usual wrong turns, computed here to recognise them.
std::string which_mistake(const Matrix& got, const Matrix& y, const Matrix& dy, int64_t rows, int64_t cols) {
  Matrix diagonal(y.size()), no_y_factor(y.size()), negated(y.size()), whole_matrix(y.size());
  double dot_all = 0;
  for (size_t i = 0; i < y.size(); ++i) dot_all += dy[i] * y[i];
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (int64_t c = 0; c < cols; ++c) dot += dy[r * cols + c] * y[r * cols + c];
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t i = r * cols + j;
      diagonal[i] = dy[i] * y[i] * (1 - y[i]);
      no_y_factor[i] = dy[i] - dot;
      negated[i] = -y[i] * (dy[i] - dot);
      whole_matrix[i] = y[i] * (dy[i] - dot_all);
    }
  }
  if (close(got, diagonal))
    return "You used only ∂y[c]/∂x[c], the diagonal of the Jacobian. But y[c] depends on every x[j] of its\n"
           "row, through the sum in the denominator, so ∂y[c]/∂x[j] is not zero for j ≠ c. dx[j] must add\n"
           "up what x[j] does to the loss along every path: through y[j] and through every other y[c]:\n"
           "gradients arriving along several paths are summed. " + grader::see("## The graph");
  if (close(got, no_y_factor))
    return "The shape of your answer is right, but every element lacks a factor: the local derivative\n"
           "∂y[c]/∂x[j] is proportional to y[c] (an output that is tiny barely moves).";
  if (close(got, negated)) return "Every element has the wrong sign: check the sign of ∂y[c]/∂x[j] for j ≠ c.";
  if (close(got, dy))
    return "You returned dy unchanged: that is the backward of an op that passes x through. Softmax's\n"
           "local derivative is not 1.";
  if (rows > 1 && close(got, whole_matrix))
    return "Your rows are mixed: each row is its own softmax (its own sum in the denominator), so the\n"
           "gradient of row r depends only on y and dy of row r.";
  return "";
}

// Grades one shape; dy of row `constant_row` (if >= 0) is the same number in every column.
// The inputs are drawn from stream `stream` of the grading's seed.
std::string grade(grader::Grader& g, int64_t rows, int64_t cols, double logit_scale, int64_t constant_row,
                  uint64_t stream) {
  std::mt19937_64 rng = g.rng(stream);
  std::normal_distribution<double> normal(0.0, 1.0);
  Matrix x(rows * cols), dy(rows * cols);
  for (double& v : x) v = logit_scale * normal(rng);
  for (double& v : dy) v = normal(rng);
  if (constant_row >= 0)
    for (int64_t c = 0; c < cols; ++c) dy[constant_row * cols + c] = 0.75;
  const Matrix y = softmax(x, rows, cols);
  const Matrix got = g.run([&] { return softmax_backward(y, dy, rows, cols); });
  const Matrix want = finite_differences(x, dy, rows, cols);
  if (got.size() != want.size())
    return format("dx has %zu numbers; it must have one per element of x, %lld (the shape of x).", got.size(),
                  (long long)want.size());
  if (close(got, want)) return "";
  bool all_zero = true;
  for (double v : got) all_zero = all_zero && v == 0;
  if (all_zero)
    return "dx is all zeros: still the TODO. Every x[j] moves the loss: through y[j], and through the\n"
           "denominator of every other y[c] of its row. " + grader::see("## Exercise");
  const std::string mistake = which_mistake(got, y, dy, rows, cols);
  size_t at = 0;
  double worst = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(got[i] - want[i]) / (1e-7 + 1e-6 * std::fabs(want[i]));
    if (!(d <= worst)) worst = d, at = i;
  }
  return format("element (%lld, %lld) of dx is %.9f; finite differences say %.9f.\n", (long long)(at / cols),
                (long long)(at % cols), got[at], want[at]) +
         (mistake.empty() ? "Derive ∂y[c]/∂x[j] for j = c and for j ≠ c, then sum over c." : mistake);
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"01", "the backward of softmax", "01_tensors_autograd", "Exercise"}, argc, argv);
  // The exercise is arithmetic on vectors: no function of halfgrad has a place in it, and
  // several would do the work (softmax and autograd, or exp, sum and div with run_backward).
  g.own_code_only({{"hg::softmax", "the engine's softmax, whose backward autograd would run"},
                   {"hg::log_softmax", "the engine's log-softmax, whose backward autograd would run"},
                   {"hg::cross_entropy", "the engine's fused softmax + cross-entropy"},
                   {"hg::Tensor::backward", "autograd, which runs the engine's own softmax backward"},
                   {"hg::run_backward", "autograd, which runs the backward of every op for you"},
                   {"hg::Tensor::requires_grad_", "autograd, which records the ops for their backward"},
                   {"hg::", "a function of halfgrad: this exercise is written with plain arithmetic on the "
                            "vectors, and halfgrad's ops with autograd would compute the answer"}});
  g.check("one row of two numbers", [&] { return grade(g, 1, 2, 1.0, -1, 1); });
  g.check("one row of seven numbers", [&] { return grade(g, 1, 7, 1.0, -1, 2); });
  g.check("three rows of four: each row is its own softmax", [&] { return grade(g, 3, 4, 1.0, -1, 3); });
  g.check("a confident row (large logits: y is nearly one-hot)", [&] { return grade(g, 2, 5, 6.0, -1, 4); });
  g.check("a row whose dy is the same everywhere gets dx = 0 (softmax ignores a constant shift)",
          [&] { return grade(g, 4, 6, 1.0, 2, 5); });
  return g.finish();
}
