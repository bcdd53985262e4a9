// A wrong answer: dW computed as Xᵀ·dY, which has the shape (in, out) of Wᵀ.
// expect: Yours is transposed
#include "framework/ops/ops.h"
#include "lessons/02_fp32_training/exercise.h"

LinearGrads linear_backward(const hg::Tensor& x, const hg::Tensor& w, const hg::Tensor& dy) {
  LinearGrads g;
  g.dx = hg::matmul(dy, w);
  g.dw = hg::matmul(x, dy, /*trans_a=*/true, false);
  g.db = hg::sum(dy, 0);
  return g;
}
