// Activations and other one-input functions (unary.h): forward and backward side by side.
#include "cuda/ops/unary.h"
#include "cuda/ops/kernel_common.cuh"

namespace hg::cuda {

__device__ __forceinline__ float normal_cdf(float x) { return 0.5f * (1.0f + erff(x * 0.70710678118654752f)); }
__device__ __forceinline__ float normal_pdf(float x) { return expf(-0.5f * x * x) * 0.3989422804014327f; }

__device__ __forceinline__ float forward(Unary op, float x) {
  switch (op) {
    case Unary::Relu: return x > 0.0f ? x : 0.0f;
    case Unary::Gelu: return x * normal_cdf(x);
    case Unary::Sigmoid: return 1.0f / (1.0f + expf(-x));
    case Unary::Tanh: return tanhf(x);
    case Unary::Exp: return expf(x);
    case Unary::Log: return logf(x);
    case Unary::Sqrt: return sqrtf(x);
    case Unary::Square: return x * x;
    case Unary::Neg: return -x;
  }
  return 0.0f;
}

// s is the saved value of the table in unary.h (x or y).
__device__ __forceinline__ float backward(Unary op, float g, float s) {
  switch (op) {
    case Unary::Relu: return s > 0.0f ? g : 0.0f;              // relu'(x) = [x > 0]
    case Unary::Gelu: return g * (normal_cdf(s) + s * normal_pdf(s));  // Φ(x) + x φ(x)
    case Unary::Sigmoid: return g * s * (1.0f - s);           // σ' = σ (1 − σ)
    case Unary::Tanh: return g * (1.0f - s * s);              // tanh' = 1 − tanh²
    case Unary::Exp: return g * s;                            // exp' = exp
    case Unary::Log: return g / s;                            // log' = 1/x
    case Unary::Sqrt: return g / (2.0f * s);                  // √' = 1 / (2√x)
    case Unary::Square: return g * 2.0f * s;                  // (x²)' = 2x
    case Unary::Neg: return -g;
  }
  return 0.0f;
}

template <class T>
__global__ void unary_forward_kernel(Unary op, const T* x, T* y, int64_t n) {
  HG_GRID_STRIDE(i, n) store(y, i, forward(op, load(x, i)));
}

template <class T>
__global__ void unary_backward_kernel(Unary op, const T* dy, const T* saved, T* dx, int64_t n) {
  HG_GRID_STRIDE(i, n) store(dx, i, backward(op, load(dy, i), saved ? load(saved, i) : 0.0f));
}

void launch_unary_forward(Unary op, DType dt, const void* x, void* y, int64_t n) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, unary_forward_kernel<T><<<launch_1d(n), kThreads>>>(op, static_cast<const T*>(x), static_cast<T*>(y), n));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_unary_backward(Unary op, DType dt, const void* dy, const void* saved, void* dx, int64_t n) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, unary_backward_kernel<T><<<launch_1d(n), kThreads>>>(op, static_cast<const T*>(dy), static_cast<const T*>(saved), static_cast<T*>(dx), n));
  HG_CUDA_CHECK(cudaGetLastError());
}

// pow carries its exponent, so it has kernels of its own (same shape as the two above).
template <class T>
__global__ void pow_forward_kernel(const T* x, T* y, int64_t n, float p) {
  HG_GRID_STRIDE(i, n) store(y, i, powf(load(x, i), p));
}

template <class T>
__global__ void pow_backward_kernel(const T* dy, const T* x, T* dx, int64_t n, float p) {
  HG_GRID_STRIDE(i, n) store(dx, i, load(dy, i) * p * powf(load(x, i), p - 1.0f));  // (x^p)' = p·x^(p−1)
}

void launch_pow_forward(DType dt, const void* x, void* y, int64_t n, float p) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, pow_forward_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<const T*>(x), static_cast<T*>(y), n, p));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_pow_backward(DType dt, const void* dy, const void* x, void* dx, int64_t n, float p) {
  if (n == 0) return;
  HG_DISPATCH(dt, T, pow_backward_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dx), n, p));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
