// A cheat: softmax built from the engine's exp, sum and div, and run_backward does the
// backward (x recovered as log y). No hg::softmax in sight; every halfgrad function is the
// answer already written here.
// expect: exercise\.cpp calls hg::run_backward
#include <cmath>

#include "framework/autograd/backward.h"
#include "framework/ops/ops.h"
#include "lessons/01_tensors_autograd/exercise.h"

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols) {
  std::vector<double> logs(y.size());
  for (size_t i = 0; i < y.size(); ++i) logs[i] = std::log(y[i]);
  hg::Tensor x = hg::Tensor::from_vector(logs, {rows, cols}, hg::DType::F64);
  x.requires_grad_(true);
  const hg::Tensor e = hg::exp(x);
  const hg::Tensor s = hg::div(e, hg::sum(e, 1, /*keepdim=*/true));
  hg::run_backward(s, hg::Tensor::from_vector(dy, {rows, cols}, hg::DType::F64));
  return x.grad().to_double_vector();
}
