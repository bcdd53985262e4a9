// A wrong answer: one sum over the whole matrix instead of one per row.
// expect: Your rows are mixed
#include "lessons/01_tensors_autograd/exercise.h"

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols) {
  double dot = 0;
  for (int64_t i = 0; i < rows * cols; ++i) dot += dy[i] * y[i];
  std::vector<double> dx(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) dx[i] = y[i] * (dy[i] - dot);
  return dx;
}
