#pragma once
// tests/unit/gradcheck.h — the one finite-difference gradient check every op goes through.
//
// For an op y = f(x1, x2, ...) in F64, pick a fixed random upstream gradient u (the shape of
// y) and the scalar L = Σ u ⊙ f(x). Autograd gives dL/dxi by y.backward(u). Finite
// differences give, for every element j of every input,
//
//     dL/dxi[j] ≈ (L(xi[j] + ε) − L(xi[j] − ε)) / 2ε           (central difference, error O(ε²))
//
// and the two must agree within atol + rtol·|numeric|. ε = 1e-6 in F64 leaves ~1e-10 of
// rounding noise and ~1e-12 of truncation error, so 1e-6 relative is a strict bar.
// On failure it prints the op, the input, the element, both values and the max difference.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "framework/halfgrad.h"

namespace hg::test {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-7;
  double rtol = 1e-5;
  std::vector<bool> check;  // which inputs to check (default: all)
  uint64_t seed = 1234;
};

inline double weighted_sum(const Tensor& y, const std::vector<double>& u) {
  std::vector<double> v = y.to_double_vector();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * u[i];
  return s;
}

// Returns the largest |analytic − numeric| seen (also CHECKed against the tolerance).
inline double gradcheck(const std::string& name,
                        const std::function<Tensor(const std::vector<Tensor>&)>& f,
                        std::vector<Tensor> inputs, GradcheckOptions opt = {}) {
  if (opt.check.empty()) opt.check.assign(inputs.size(), true);
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i] = inputs[i].to(DType::F64).detach().clone();
    if (opt.check[i]) inputs[i].requires_grad_();
  }
  Tensor y = f(inputs);
  REQUIRE_MESSAGE(y.dtype() == DType::F64, name << ": output is " << std::string(dtype_name(y.dtype())));
  Generator gen(opt.seed);
  Tensor u = Tensor::randn(y.shape(), gen, DType::F64);
  std::vector<double> uv = u.to_double_vector();
  y.backward(u);

  double max_diff = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!opt.check[i]) continue;
    REQUIRE_MESSAGE(inputs[i].grad().defined(), name << ": no gradient reached input " << i);
    std::vector<double> analytic = inputs[i].grad().to_double_vector();
    double* x = inputs[i].data<double>();
    int bad = 0;
    for (int64_t j = 0; j < inputs[i].numel(); ++j) {
      NoGradGuard ng;
      double keep = x[j];
      x[j] = keep + opt.eps;
      double lp = weighted_sum(f(inputs), uv);
      x[j] = keep - opt.eps;
      double lm = weighted_sum(f(inputs), uv);
      x[j] = keep;
      double numeric = (lp - lm) / (2 * opt.eps);
      double diff = std::fabs(analytic[j] - numeric);
      max_diff = std::max(max_diff, diff);
      if (diff > opt.atol + opt.rtol * std::fabs(numeric) && bad++ < 5)
        FAIL_CHECK(name << ": input " << i << " element " << j << ": autograd " << analytic[j]
                        << " vs finite difference " << numeric << " (diff " << diff << ")");
    }
    CHECK_MESSAGE(bad == 0, name << ": input " << i << ": " << bad << " elements off; max diff "
                                 << max_diff);
  }
  MESSAGE(name << ": max |autograd - finite difference| = " << max_diff);
  return max_diff;
}

// A tensor of values spread over [lo, hi], F64, deterministic.
inline Tensor test_input(const Shape& shape, uint64_t seed, double lo = -1.0, double hi = 1.0) {
  Generator g(seed);
  return Tensor::uniform(shape, lo, hi, g, DType::F64);
}

// max |a − b| over all elements, and whether every element is within atol + rtol·|b|.
struct Compare {
  double max_diff = 0;
  bool ok = true;
};
inline Compare compare(const std::vector<double>& a, const std::vector<double>& b, double atol,
                       double rtol) {
  Compare c;
  if (a.size() != b.size()) {
    c.ok = false;
    c.max_diff = INFINITY;
    return c;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    double d = std::fabs(a[i] - b[i]);
    if (std::isnan(a[i]) || std::isnan(b[i])) d = std::isnan(a[i]) && std::isnan(b[i]) ? 0 : INFINITY;
    else if (std::isinf(a[i]) || std::isinf(b[i])) d = a[i] == b[i] ? 0 : INFINITY;  // same inf
    c.max_diff = std::max(c.max_diff, d);
    if (d > atol + rtol * std::fabs(b[i])) c.ok = false;
  }
  return c;
}

}  // namespace hg::test
