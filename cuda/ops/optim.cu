// Fused optimizer updates and dtype casts (optim.h): one thread per parameter.
#include "cuda/ops/kernel_common.cuh"
#include "cuda/ops/optim.h"

#include <cmath>

namespace hg::cuda {

template <class T>
__global__ void sgd_kernel(T* p, const T* grad, float* buf, int64_t n, float lr, float momentum, float dampening,
                           float wd, bool nesterov, bool first) {
  HG_GRID_STRIDE(i, n) {
    const float pi = load(p, i);
    float g = load(grad, i) + wd * pi;
    if (momentum != 0.0f) {
      const float b = first ? g : momentum * buf[i] + (1.0f - dampening) * g;
      buf[i] = b;
      g = nesterov ? g + momentum * b : b;
    }
    store(p, i, pi - lr * g);
  }
}

template <class T>
__global__ void adam_kernel(T* p, const T* grad, float* m, float* v, int64_t n, float lr, float b1, float b2, float eps,
                            float wd, bool decoupled, float bc1, float bc2) {
  HG_GRID_STRIDE(i, n) {
    float pi = load(p, i), g = load(grad, i);
    if (decoupled) pi *= 1.0f - lr * wd;
    else g += wd * pi;
    const float mi = b1 * m[i] + (1.0f - b1) * g;
    const float vi = b2 * v[i] + (1.0f - b2) * g * g;
    m[i] = mi;
    v[i] = vi;
    store(p, i, pi - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps));
  }
}

template <class From, class To>
__global__ void cast_kernel(const From* x, To* y, int64_t n) {
  HG_GRID_STRIDE(i, n) store(y, i, load(x, i));
}

void sgd_step(Dtype dt, void* param, const void* grad, float* momentum_buf, int64_t n, float lr, float momentum,
              float dampening, float weight_decay, bool nesterov, bool first_step) {
  if (n == 0) return;
  if (momentum != 0.0f && momentum_buf == nullptr) throw std::invalid_argument("sgd_step: momentum needs a buffer");
  HG_DISPATCH(dt, T, sgd_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<T*>(param), static_cast<const T*>(grad), momentum_buf, n, lr, momentum, dampening, weight_decay, nesterov, first_step));
  HG_CUDA_CHECK(cudaGetLastError());
}

void adam_step(Dtype dt, void* param, const void* grad, float* m, float* v, int64_t n, float lr, float beta1,
               float beta2, float eps, float weight_decay, bool decoupled, int64_t step) {
  if (n == 0) return;
  if (step < 1) throw std::invalid_argument("adam_step: step counts from 1");
  // Bias corrections in double on the host: β^t for large t underflows gracefully to 0.
  const float bc1 = float(1.0 - std::pow(double(beta1), double(step)));
  const float bc2 = float(1.0 - std::pow(double(beta2), double(step)));
  HG_DISPATCH(dt, T, adam_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<T*>(param), static_cast<const T*>(grad), m, v, n, lr, beta1, beta2, eps, weight_decay, decoupled, bc1, bc2));
  HG_CUDA_CHECK(cudaGetLastError());
}

void cast(Dtype from, const void* x, Dtype to, void* y, int64_t n) {
  if (n == 0) return;
  HG_DISPATCH(from, F, HG_DISPATCH(to, T, cast_kernel<F, T><<<launch_1d(n), kThreads>>>(static_cast<const F*>(x), static_cast<T*>(y), n)));
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
