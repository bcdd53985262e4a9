// A wrong answer: db averaged over the batch instead of summed.
// expect: you averaged over the batch
#include "framework/ops/ops.h"
#include "lessons/02_fp32_training/exercise.h"

LinearGrads linear_backward(const hg::Tensor& x, const hg::Tensor& w, const hg::Tensor& dy) {
  LinearGrads g;
  g.dx = hg::matmul(dy, w);
  g.dw = hg::matmul(dy, x, /*trans_a=*/true, false);
  g.db = hg::mean(dy, 0);
  return g;
}
