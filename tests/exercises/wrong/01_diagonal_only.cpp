// A wrong answer: only ∂y[c]/∂x[c], the diagonal of softmax's Jacobian.
// expect: the diagonal of the Jacobian
#include "lessons/01_tensors_autograd/exercise.h"

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols) {
  std::vector<double> dx(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) dx[i] = dy[i] * y[i] * (1 - y[i]);
  return dx;
}
