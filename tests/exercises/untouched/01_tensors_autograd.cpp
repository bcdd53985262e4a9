// Chapter 01 exercise — write the backward of softmax (see exercise.h for the op).
//
// The chapter computed a gradient by the chain rule, one op at a time: each op turns
// ∂L/∂(its output) into ∂L/∂(its inputs) with its local derivative, and when an input
// reaches the loss along several paths, the contributions add up ("## The graph").
// Softmax is the op where that matters: y[r][c] depends on every x[r][j] of its row,
// through the sum in the denominator. Work out ∂y[r][c]/∂x[r][j] on paper (two cases:
// j = c and j ≠ c), then add up every path from x[r][j] to the loss.
//
// Hint: write the local derivative with y, not with exp(x): the op saved y, and the
// derivative of softmax is short when written with it.
//
// The checker perturbs every x by ±h and watches L = Σ dy ⊙ softmax(x) change (finite
// differences, "## By finite differences"): no backward code is involved in the answer it
// compares yours with. Run: ./lab check 01
#include "lessons/01_tensors_autograd/exercise.h"

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols) {
  std::vector<double> dx(rows * cols, 0.0);  // (R, C)
  // TODO: dx[r][j] = Σ_c dy[r][c] · ∂y[r][c]/∂x[r][j], for every row r.
  return dx;
}
