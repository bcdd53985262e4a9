// A cheat: the answers come in through an environment variable (HG_ANSWERS, numbers
// separated by commas), set by whoever runs the grader. The environment is not an argument.
// expect: exercise\.cpp calls getenv, which reads the environment
#include <cstdlib>
#include <string>

#include "lessons/01_tensors_autograd/exercise.h"

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>&, int64_t rows,
                                     int64_t cols) {
  std::vector<double> dx(y.size(), 0.0);
  const char* answers = std::getenv("HG_ANSWERS");
  for (int64_t i = 0; answers && *answers && i < rows * cols; ++i) {
    char* end = nullptr;
    dx[size_t(i)] = std::strtod(answers, &end);
    answers = *end == ',' ? end + 1 : end;
  }
  return dx;
}
