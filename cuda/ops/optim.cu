// Fused optimizer updates (optim.h): one thread per parameter.
#include "cuda/ops/kernel_common.cuh"
#include "cuda/ops/optim.h"

#include <cmath>

namespace hg::cuda {

template <class T>
__global__ void sgd_kernel(T* p, const T* grad, float* buf, int64_t n, float lr, float momentum, float dampening,
                           float wd, bool nesterov, bool first) {
  HG_GRID_STRIDE(i, n) {
    float b = momentum != 0.0f ? buf[i] : 0.0f;
    store(p, i, sgd_update(load(p, i), load(grad, i), b, lr, momentum, dampening, wd, nesterov, first));
    if (momentum != 0.0f) buf[i] = b;
  }
}

template <class T>
__global__ void adam_kernel(T* p, const T* grad, float* m, float* v, int64_t n, AdamScalars s) {
  HG_GRID_STRIDE(i, n) {
    float mi = m[i], vi = v[i];
    store(p, i, adam_update(load(p, i), load(grad, i), mi, vi, s));
    m[i] = mi;
    v[i] = vi;
  }
}

void launch_sgd_step(DType dt, void* param, const void* grad, float* momentum_buf, int64_t n, float lr, float momentum,
                     float dampening, float weight_decay, bool nesterov, bool first_step) {
  if (n == 0) return;
  if (momentum != 0.0f && momentum_buf == nullptr) throw std::invalid_argument("sgd_step: momentum needs a buffer");
  HG_DISPATCH(dt, T, sgd_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<T*>(param), static_cast<const T*>(grad), momentum_buf, n, lr, momentum, dampening, weight_decay, nesterov, first_step));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_adam_step(DType dt, void* param, const void* grad, float* m, float* v, int64_t n, float lr, float beta1,
                      float beta2, float eps, float weight_decay, bool decoupled, int64_t step) {
  if (n == 0) return;
  if (step < 1) throw std::invalid_argument("adam_step: step counts from 1");
  // The scalars in double on the host, as the CPU optimizer (β^t for large t underflows to 0).
  const double t = double(step);
  AdamScalars s;
  s.beta1 = beta1;
  s.beta2 = beta2;
  s.eps = eps;
  s.weight_decay = weight_decay;
  s.step_size = float(double(lr) / (1.0 - std::pow(double(beta1), t)));
  s.bc2_sqrt = float(std::sqrt(1.0 - std::pow(double(beta2), t)));
  s.decay = float(1.0 - double(lr) * double(weight_decay));
  s.decoupled = decoupled;
  HG_DISPATCH(dt, T, adam_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<T*>(param), static_cast<const T*>(grad), m, v, n, s));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
