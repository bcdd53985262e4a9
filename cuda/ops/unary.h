#pragma once
// Elementwise functions of one tensor and their backward, on device buffers (F32 math).
//
//   op       forward y = f(x)          backward dx = dy · f'(.)       `saved` is
//   Relu     max(x, 0)                 dy · [x > 0]                   x
//   Gelu     x · Φ(x)  (erf form)      dy · (Φ(x) + x · φ(x))         x
//   Sigmoid  1 / (1 + e^−x)            dy · y · (1 − y)               y
//   Tanh     tanh x                    dy · (1 − y²)                  y
//   Exp      e^x                       dy · y                         y
//   Log      ln x                      dy / x                         x
//   Sqrt     √x                        dy / (2 y)                     y
//   Square   x²                        dy · 2x                        x
//   Neg      −x                        −dy                            (unused)
//   pow      x^p                       dy · p · x^(p−1)               x      (own entry: it has p)
// The `saved` column matches what the CPU ops keep (framework/ops/unary.cpp), so the
// framework passes the same tensor to either backend.
#include "cuda/ops/dtype.h"

namespace hg::cuda {

enum class Unary { Relu, Gelu, Sigmoid, Tanh, Exp, Log, Sqrt, Square, Neg };

void launch_unary_forward(Unary op, DType dt, const void* x, void* y, int64_t n);
void launch_unary_backward(Unary op, DType dt, const void* dy, const void* saved, void* dx, int64_t n);

void launch_pow_forward(DType dt, const void* x, void* y, int64_t n, float p);
void launch_pow_backward(DType dt, const void* dy, const void* x, void* dx, int64_t n, float p);

}  // namespace hg::cuda
