// A wrong answer: an index far past the end of y. The learner's code crashes in the grader's
// child, and the check says so in words (not the shell's "Segmentation fault").
// expect: crashed with a segmentation fault \(SIGSEGV\)
#include "lessons/01_tensors_autograd/exercise.h"

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols) {
  std::vector<double> dx(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) dx[i] = dy[i] * y[(rows * cols + i) << 40];
  return dx;
}
