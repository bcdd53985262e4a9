#pragma once
// Chapter 01 exercise: the backward of softmax, an op whose every output depends on every
// input of its row.
//
//   forward, for each row r of x (R, C):   y[r][c] = exp(x[r][c]) / Σ_j exp(x[r][j])
//   backward: given y (the forward's output, which the op saved) and dy = ∂L/∂y (R, C),
//             return dx = ∂L/∂x (R, C)
//
// All matrices are row-major std::vector<double>: element (r, c) is at r·C + c.
// exercise.cpp is yours; `./lab check 01` grades it against finite differences.
#include <cstdint>
#include <vector>

std::vector<double> softmax_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                     int64_t rows, int64_t cols);
