// A wrong answer: the engine's softmax and autograd do the work (x recovered as log y).
// expect: exercise\.cpp calls hg::softmax
#include <cmath>

#include "framework/ops/ops.h"
#include "lessons/01_tensors_autograd/exercise.h"

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols) {
  std::vector<double> logs(y.size());
  for (size_t i = 0; i < y.size(); ++i) logs[i] = std::log(y[i]);
  hg::Tensor x = hg::Tensor::from_vector(logs, {rows, cols}, hg::DType::F64);
  x.requires_grad_(true);
  hg::softmax(x, 1).backward(hg::Tensor::from_vector(dy, {rows, cols}, hg::DType::F64));
  return x.grad().to_double_vector();
}
