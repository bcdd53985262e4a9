// A cheat: a fork() of its own would run in the grader's process in place of the C
// library's, before any check. The build refuses to link it.
// expect: exercise\.cpp defines `fork` as a C name
#include <sys/types.h>

#include "lessons/01_tensors_autograd/exercise.h"

extern "C" pid_t fork() { return 0; }

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>&, int64_t, int64_t) {
  return std::vector<double>(y.size(), 0.0);
}
