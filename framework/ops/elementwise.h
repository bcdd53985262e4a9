#pragma once
// framework/ops/elementwise.h — + − × ÷ between tensors (with broadcasting) and scalars.
//
// Broadcasting (NumPy/PyTorch rules): shapes are aligned on the right; two sizes match when
// equal or when one is 1, and a size-1 dim repeats. (N, C) + (C) -> (N, C);
// (N, 1) * (1, C) -> (N, C). Both tensors must have the same dtype (no silent promotion).
//
// Backward of a broadcast input: the forward *copied* it along the broadcast dims, so its
// gradient *sums* over them (sum_to_shape).
#include "framework/tensor/tensor.h"

namespace hg {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);

Tensor add(const Tensor& a, double s);   // a + s
Tensor sub(const Tensor& a, double s);   // a − s
Tensor rsub(double s, const Tensor& a);  // s − a
Tensor mul(const Tensor& a, double s);   // a · s
Tensor div(const Tensor& a, double s);   // a / s
Tensor rdiv(double s, const Tensor& a);  // s / a
Tensor neg(const Tensor& a);             // −a

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return sub(a, s); }
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return div(a, s); }
inline Tensor operator+(double s, const Tensor& a) { return add(a, s); }
inline Tensor operator-(double s, const Tensor& a) { return rsub(s, a); }
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
inline Tensor operator/(double s, const Tensor& a) { return rdiv(s, a); }
inline Tensor operator-(const Tensor& a) { return neg(a); }

// The shape a and b broadcast to; throws naming both shapes when they cannot.
Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b);
// Sum g over the dims that were broadcast to turn `shape` into g's shape.
Tensor sum_to_shape(const Tensor& g, const Shape& shape);

// ---- in place, never recorded (for optimizers, gradient accumulation, loss scaling) ----
// They change the tensor's numbers for every handle that shares them; use them on leaves
// and gradients, not on tensors a recorded graph still needs.
void add_(Tensor& dst, const Tensor& src, double alpha = 1.0);  // dst += alpha·src (same shape)
void mul_(Tensor& dst, double s);                                // dst *= s
void copy_(Tensor& dst, const Tensor& src);  // dst = src, converting dtype (same shape)
void fill_(Tensor& dst, double value);

}  // namespace hg
