// A wrong answer: right, but it asks for 3 GiB of scratch memory first, more than the
// grader's 2 GiB limit. Without the limit it would pass.
// expect: ran out of memory: it asked for more than the 2048 MiB
#include <memory>

#include "lessons/01_tensors_autograd/exercise.h"

char* volatile g_scratch = nullptr;  // kept, so that the allocation is not optimised away

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols) {
  std::unique_ptr<char[]> scratch(new char[size_t(3) << 30]);
  g_scratch = scratch.get();
  std::vector<double> dx(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0;
    for (int64_t c = 0; c < cols; ++c) dot += dy[r * cols + c] * y[r * cols + c];
    for (int64_t j = 0; j < cols; ++j) dx[r * cols + j] = y[r * cols + j] * (dy[r * cols + j] - dot);
  }
  return dx;
}
