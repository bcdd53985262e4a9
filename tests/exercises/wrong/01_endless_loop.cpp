// A wrong answer: the row loop never advances, so it never ends. The grader stops it at its
// time limit (1 s here) and does not run the checks after it.
// args: --time-limit 1
// expect: did not finish within 1 s .*\(not run: the code above did not finish\)
#include "lessons/01_tensors_autograd/exercise.h"

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols) {
  std::vector<double> dx(rows * cols);
  for (int64_t r = 0; r < rows;) {  // ++r forgotten
    double dot = 0;
    for (int64_t c = 0; c < cols; ++c) dot += dy[r * cols + c] * y[r * cols + c];
    for (int64_t j = 0; j < cols; ++j) dx[r * cols + j] = y[r * cols + j] * (dy[r * cols + j] - dot);
  }
  return dx;
}
