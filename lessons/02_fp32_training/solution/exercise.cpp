// Chapter 02 exercise — reference solution.
//
//   Y[n][o] = Σ_i X[n][i] · W[o][i] + b[o]
//
//   dX[n][i] = Σ_o dY[n][o] · W[o][i]     ->  dX = dY · W       (N, out)·(out, in) = (N, in)
//   dW[o][i] = Σ_n dY[n][o] · X[n][i]     ->  dW = dYᵀ · X      (out, N)·(N, in)   = (out, in)
//   db[o]    = Σ_n dY[n][o]               ->  db = column sums of dY               (out)
//
// The bias was added to every row, so its gradient sums over the rows; the weight is used
// by every row, so its gradient too is a sum over the batch — that sum is the matmul's N.
#include "lessons/02_fp32_training/exercise.h"

#include "framework/ops/ops.h"

LinearGrads linear_backward(const hg::Tensor& x, const hg::Tensor& w, const hg::Tensor& dy) {
  LinearGrads g;
  g.dx = hg::matmul(dy, w);                            // (N, in)
  g.dw = hg::matmul(dy, x, /*trans_a=*/true, false);   // (out, in)
  g.db = hg::sum(dy, 0);                               // (out)
  return g;
}
