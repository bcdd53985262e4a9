// Chapter 01 exercise — the reference solution.
//
//   y[c] = exp(x[c]) / S,  S = Σ_j exp(x[j])           (one row)
//
//   ∂y[c]/∂x[c] = y[c]·(1 − y[c])                        x[c] is in the numerator and in S
//   ∂y[c]/∂x[j] = −y[c]·y[j]        (j ≠ c)              x[j] is only in S
//   both at once: ∂y[c]/∂x[j] = y[c]·(δ[c][j] − y[j])
//
//   dx[j] = Σ_c dy[c]·y[c]·(δ[c][j] − y[j])
//         = y[j]·(dy[j] − Σ_c dy[c]·y[c])               every path from x[j] added up
//
// One dot product per row, then one multiply per element: O(C), not the O(C²) of the
// whole Jacobian.
#include "lessons/01_tensors_autograd/exercise.h"

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols) {
  std::vector<double> dx(rows * cols);  // (R, C)
  for (int64_t r = 0; r < rows; ++r) {
    const double* yr = &y[r * cols];
    const double* dyr = &dy[r * cols];
    double dot = 0;  // Σ_c dy[c]·y[c]
    for (int64_t c = 0; c < cols; ++c) dot += dyr[c] * yr[c];
    for (int64_t j = 0; j < cols; ++j) dx[r * cols + j] = yr[j] * (dyr[j] - dot);
  }
  return dx;
}
