#include "framework/amp/unscale.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "framework/autograd/grad_mode.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/unary.h"
#include "framework/cuda/amp.h"

namespace hg::amp {

namespace {
// The .grad of p as a contiguous tensor we may write in place, or undefined.
Tensor writable_grad(const Tensor& p, const char* who) {
  Tensor g = p.grad();
  if (!g.defined()) return g;
  if (!g.is_contiguous())
    throw std::runtime_error(std::string(who) + ": gradient is not contiguous");
  return g;
}

// The GPU does the same passes with kernels (cuda/ops/amp.h): all gradients of a list live
// on one device, so the first defined one decides.
bool on_gpu(const std::vector<Tensor>& params) {
  for (const Tensor& p : params)
    if (p.grad().defined()) return p.grad().device() == Device::CUDA;
  return false;
}

bool gpu_pass(const std::vector<Tensor>& params, float inv_scale, bool check_only, const char* who) {
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    Tensor g = writable_grad(p, who);
    if (!g.defined()) continue;
    if (g.device() != Device::CUDA)
      throw std::runtime_error(std::string(who) + ": gradients on both the CPU and the GPU");
    grads.push_back(g);
  }
  return cuda::unscale_and_check(grads, inv_scale, check_only);
}
}  // namespace

bool unscale_grads_(const std::vector<Tensor>& params, float inv_scale) {
  if (on_gpu(params)) {
    // The kernel checks each value before its multiply. For inv_scale <= 1 that is the same
    // test as after it: a finite value times inv_scale stays finite, inf and NaN stay
    // non-finite. A larger inv_scale (S < 1) can overflow a finite value, or be inf itself
    // (0 · inf = NaN): then a second pass checks the results.
    bool found = gpu_pass(params, inv_scale, /*check_only=*/false, "unscale_");
    if (!found && !(inv_scale <= 1.0f)) found = gpu_pass(params, 1.0f, /*check_only=*/true, "unscale_");
    return found;
  }
  bool found = false;
  for (const Tensor& p : params) {
    Tensor g = writable_grad(p, "unscale_");
    if (!g.defined()) continue;
    const int64_t n = g.numel();
    visit_dtype(g.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* d = g.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        d[i] = store<T>(load(d[i]) * inv_scale);
        if (!std::isfinite(load(d[i]))) found = true;  // the value the optimizer will read
      }
    });
  }
  return found;
}

bool grads_have_inf_or_nan(const std::vector<Tensor>& params) {
  if (on_gpu(params)) return gpu_pass(params, 1.0f, /*check_only=*/true, "grads_have_inf_or_nan");
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor c = g.contiguous();
    bool found = false;
    visit_dtype(c.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* d = c.data<T>();
      for (int64_t i = 0, n = c.numel(); i < n && !found; ++i)
        if (!std::isfinite(load(d[i]))) found = true;
    });
    if (found) return true;
  }
  return false;
}

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm) {
  // ‖g‖ = sqrt(Σ over all parameters and elements of g²)
  if (on_gpu(params)) {
    // On the GPU with the engine's own ops: Σ g² per tensor as an F32 reduction (the CPU
    // loop below sums in double), the total in double here, and an in-place g *= factor.
    NoGradGuard no_grad;
    double sumsq = 0.0;
    for (const Tensor& p : params) {
      Tensor g = writable_grad(p, "clip_grad_norm_");
      if (g.defined()) sumsq += sum(square(g.detach().to(DType::F32))).item();
    }
    const double norm = std::sqrt(sumsq);
    if (!std::isfinite(norm) || norm <= max_norm) return norm;
    const double factor = max_norm / (norm + 1e-6);
    for (const Tensor& p : params) {
      Tensor g = writable_grad(p, "clip_grad_norm_");
      if (g.defined()) mul_(g, factor);
    }
    return norm;
  }
  double sumsq = 0.0;
  for (const Tensor& p : params) {
    Tensor g = writable_grad(p, "clip_grad_norm_");
    if (!g.defined()) continue;
    visit_dtype(g.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* d = g.data<T>();
      for (int64_t i = 0, n = g.numel(); i < n; ++i) {
        const double v = double(load(d[i]));
        sumsq += v * v;
      }
    });
  }
  const double norm = std::sqrt(sumsq);
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  const double factor = max_norm / (norm + 1e-6);
  for (const Tensor& p : params) {
    Tensor g = writable_grad(p, "clip_grad_norm_");
    if (!g.defined()) continue;
    visit_dtype(g.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using C = compute_t<T>;
      T* d = g.data<T>();
      for (int64_t i = 0, n = g.numel(); i < n; ++i) d[i] = store<T>(C(load(d[i]) * factor));
    });
  }
  return norm;
}

double max_abs_grad(const std::vector<Tensor>& params) {
  if (on_gpu(params)) {
    std::vector<Tensor> grads;
    for (const Tensor& p : params) grads.push_back(writable_grad(p, "max_abs_grad"));
    return cuda::max_abs_finite(grads);  // one kernel per tensor, one download
  }
  // Non-negative floats order as their bit patterns read as integers (the exponent field
  // sits above the mantissa), and inf and NaN are the patterns from 0x7F800000 up. So max |g|
  // over the finite values is an integer max over bits & 0x7FFFFFFF that counts those
  // patterns as 0: no copy and no branch per element, a loop the compiler vectorises (it runs
  // after every step, over every gradient). Signed int32, because x86-64's baseline SIMD
  // (SSE2) compares signed integers only; the masked bits are never negative.
  NoGradGuard no_grad;
  int32_t m = 0;
  for (const Tensor& p : params) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor g32 = g.contiguous().to(DType::F32);  // F32 gradients: the tensor itself
    const float* d = g32.data<float>();
    for (int64_t i = 0, n = g32.numel(); i < n; ++i) {
      int32_t u;
      std::memcpy(&u, d + i, 4);
      u &= 0x7FFFFFFF;                           // |g|
      m = std::max(m, u < 0x7F800000 ? u : 0);  // inf and NaN count as 0
    }
  }
  float largest;
  std::memcpy(&largest, &m, 4);
  return double(largest);
}

}  // namespace hg::amp
