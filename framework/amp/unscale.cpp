#include "framework/amp/unscale.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace hg::amp {

namespace {
// The .grad of p as a CPU contiguous tensor we may write in place, or undefined.
Tensor writable_grad(const Tensor& p, const char* who) {
  Tensor g = p.grad();
  if (!g.defined()) return g;
  if (g.device() != Device::CPU)
    throw std::runtime_error(std::string(who) + ": gradients on the GPU are not handled here yet");
  if (!g.is_contiguous())
    throw std::runtime_error(std::string(who) + ": gradient is not contiguous");
  return g;
}
}  // namespace

bool unscale_grads_(const std::vector<Tensor>& params, float inv_scale) {
  bool found = false;
  for (const Tensor& p : params) {
    Tensor g = writable_grad(p, "unscale_");
    if (!g.defined()) continue;
    const int64_t n = g.numel();
    visit_dtype(g.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* d = g.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        const auto v = load(d[i]);
        if (!std::isfinite(v)) found = true;
        d[i] = store<T>(v * inv_scale);
      }
    });
  }
  return found;
}

bool grads_have_inf_or_nan(const std::vector<Tensor>& params) {
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

}  // namespace hg::amp
