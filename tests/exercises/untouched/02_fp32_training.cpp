// Chapter 02 exercise — write the backward pass of a linear layer.
//
//   forward:  Y = X · Wᵀ + b      X (N, in)   W (out, in)   b (out)   Y (N, out)
//             Y[n][o] = Σ_i X[n][i] · W[o][i] + b[o]
//
// Given dY (N, out) — how the loss changes with each output — compute:
//   dX (N, in):   how the loss changes with each input
//   dW (out, in): ... with each weight
//   db (out):     ... with each bias
//
// Work it out from the sum above, one number at a time: which outputs Y[n][o] does this
// X[n][i] (or W[o][i], or b[o]) take part in, and with what slope? The loss feels the
// number through every one of those outputs, and the contributions add up.
//
// Two ways to write it, both fine:
//   - loops over x.data<double>(), w.data<double>(), dy.data<double>() into
//     hg::Tensor::zeros({...}, hg::DType::F64) results, or
//   - the engine's ops: hg::matmul(a, b, trans_a, trans_b), hg::sum(t, dim)
//     (#include "framework/ops/ops.h").
// Autograd (hg::linear(...).backward()) is what you are writing: the checker refuses it.
// It compares your answer with finite differences. Run: ./lab check 02
#include "lessons/02_fp32_training/exercise.h"

#include "framework/ops/ops.h"

LinearGrads linear_backward(const hg::Tensor& x, const hg::Tensor& w, const hg::Tensor& dy) {
  const int64_t n = x.size(0), in = x.size(1), out = w.size(0);
  LinearGrads g;
  // TODO: dX    (N, in)
  g.dx = hg::Tensor::zeros({n, in}, hg::DType::F64);
  // TODO: dW    (out, in)
  g.dw = hg::Tensor::zeros({out, in}, hg::DType::F64);
  // TODO: db    (out)
  g.db = hg::Tensor::zeros({out}, hg::DType::F64);
  (void)dy;
  return g;
}
