#pragma once
// Chapter 02 exercise: the backward pass of a linear layer.
//
//   forward:  Y = X · Wᵀ + b      X (N, in)   W (out, in)   b (out)   Y (N, out)
//   backward: given dY = ∂L/∂Y (N, out), return
//             dX = ∂L/∂X (N, in),  dW = ∂L/∂W (out, in),  db = ∂L/∂b (out)
//
// exercise.cpp is yours; `./lab check 02` grades it.
#include "framework/tensor/tensor.h"

struct LinearGrads {
  hg::Tensor dx;  // (N, in)
  hg::Tensor dw;  // (out, in)
  hg::Tensor db;  // (out)
};

// All tensors are F64 and on the CPU when the checker calls it.
LinearGrads linear_backward(const hg::Tensor& x, const hg::Tensor& w, const hg::Tensor& dy);
