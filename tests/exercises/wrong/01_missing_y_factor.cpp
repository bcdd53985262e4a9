// A wrong answer: the sum over the row is there, the factor y[j] is not.
// expect: every element lacks a factor
#include "lessons/01_tensors_autograd/exercise.h"

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols) {
  std::vector<double> dx(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (int64_t c = 0; c < cols; ++c) dot += dy[r * cols + c] * y[r * cols + c];
    for (int64_t j = 0; j < cols; ++j) dx[r * cols + j] = dy[r * cols + j] - dot;
  }
  return dx;
}
