// A wrong answer: the engine's linear op and autograd compute the gradients.
// expect: exercise\.cpp calls hg::linear
#include "framework/ops/ops.h"
#include "lessons/02_fp32_training/exercise.h"

LinearGrads linear_backward(const hg::Tensor& x, const hg::Tensor& w, const hg::Tensor& dy) {
  hg::Tensor xr = x.clone(), wr = w.clone(), b = hg::Tensor::zeros({w.size(0)}, hg::DType::F64);
  xr.requires_grad_(true), wr.requires_grad_(true), b.requires_grad_(true);
  hg::linear(xr, wr, b).backward(dy);
  return {xr.grad(), wr.grad(), b.grad()};
}
