// A cheat: the answers to the grader's inputs, hard-coded. These are dx for the five inputs
// every grading used to ask (one per shape, drawn from fixed seeds); a grading now draws its
// inputs from a seed of its own, and the table answers another question.
// expect: element \([0-9]+, [0-9]+\) of dx is .* finite differences say
#include <cstddef>

#include "lessons/01_tensors_autograd/exercise.h"

namespace {
struct Answer {
  int64_t rows, cols;
  std::vector<double> dx;
};
const Answer* table() {
  static const Answer answers[] = {
    {1, 2, {0.55056974416178073, -0.55056974416178062}},
    {1, 7, {-0.055896741243405115, -0.010971924176581176, 0.0084004098078172135, 0.080416534967831813, -0.021849807223999151, -0.14722921421976945, 0.14713074208810581}},
    {3, 4, {0.48719671251423236, -0.2277583366798015, 0.19773495269045901, -0.4571733285248899, -0.058775901712235762, -0.27751866312527423, 0.25554049283235297, 0.080754072005157065, 0.11281695846948828, 0.0073586654680412901, -0.012595590620776202, -0.1075800333167533}},
    {2, 5, {0.01583004494561004, -0.19435051356803559, -3.8190610650545702e-06, 0.0082710429019092462, 0.17025324478158135, 1.5194751017879541e-06, 0.0014421940805819406, 0.073196719423085019, -0.074640448702280399, 1.5723511539771619e-08}},
    {4, 6, {0.0014921447837901792, 0.06867575731127365, -0.055880030724408121, -0.19929408991457156, 0.16523356930042898, 0.019772649243486849, 0.36206926590281657, -0.30189811497068014, -0.067670875648748158, -0.011529562500402745, -0.018018616263436382, 0.037047903480450901, 0, 0, 0, 0, 0, 0, -0.1319797081877962, -0.1075733960554512, 0.012969621830369446, -0.075862680181796635, 0.15351139759403759, 0.14893476500063715}},
    {0, 0, {}},
  };
  return answers;
}
}  // namespace

std::vector<double> softmax_backward(const std::vector<double>&, const std::vector<double>&, int64_t rows,
                                     int64_t cols) {
  for (const Answer* a = table(); a->rows != 0; ++a)
    if (a->rows == rows && a->cols == cols) return a->dx;
  return std::vector<double>(size_t(rows * cols), 0.0);
}
