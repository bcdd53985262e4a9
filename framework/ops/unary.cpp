#include "framework/amp/autocast.h"
#include "framework/ops/unary.h"

#include <cmath>

#include "framework/autograd/node.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/elementwise.h"
#include "framework/ops/check.h"

namespace hg {

namespace {

void check_unary(const char* op, const Tensor& x) { check_defined(op, x, "x"); }

// The op on the GPU: one kernel forward, one backward. `saved` is x or y, the column of
// cuda/ops/unary.h — the same tensor the CPU backward below keeps.
Tensor unary_on_cuda(const char* op, cuda::Unary kind, const Tensor& x_in, bool save_output) {
  Tensor x = x_in.contiguous();
  Tensor y = cuda::unary(op, kind, x);
  Tensor saved = save_output ? y.detach() : x.detach();
  return record(op, y, {x_in}, [kind, saved](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{cuda::unary_backward(kind, dy, saved)};
  });
}

using std::erf;
using std::exp;
using std::log;
using std::sqrt;
using std::tanh;

// Φ(x) = P(Z ≤ x) for a standard normal Z, and its density φ(x).
template <class C> C normal_cdf(C x) { return C(0.5) * (C(1) + erf(x * C(M_SQRT1_2))); }
template <class C> C normal_pdf(C x) { return exp(C(-0.5) * x * x) * C(0.3989422804014327); }

}  // namespace

Tensor relu(const Tensor& x) {
  check_unary("relu", x);
  switch (x.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA:
      return unary_on_cuda("relu", cuda::Unary::Relu, x, /*save_output=*/false);
  }
  Tensor y = cpu::map(x, [](auto v) { return v > 0 ? v : decltype(v)(0); });
  // relu'(x) = 1 if x > 0 else 0
  Tensor xd = x.detach();
  return record("relu", y, {x}, [xd](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{
        cpu::map2(dy, xd, [](auto g, auto v) { return v > 0 ? g : decltype(g)(0); })};
  });
}

Tensor gelu(const Tensor& x) {
  check_unary("gelu", x);
  switch (x.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA:
      return unary_on_cuda("gelu", cuda::Unary::Gelu, x, /*save_output=*/false);
  }
  Tensor y = cpu::map(x, [](auto v) { return v * normal_cdf(v); });
  // gelu'(x) = Φ(x) + x·φ(x)
  Tensor xd = x.detach();
  return record("gelu", y, {x}, [xd](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{cpu::map2(
        dy, xd, [](auto g, auto v) { return g * (normal_cdf(v) + v * normal_pdf(v)); })};
  });
}

Tensor sigmoid(const Tensor& x) {
  check_unary("sigmoid", x);
  switch (x.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA:
      return unary_on_cuda("sigmoid", cuda::Unary::Sigmoid, x, /*save_output=*/true);
  }
  using std::exp;
  Tensor y = cpu::map(x, [](auto v) { return decltype(v)(1) / (decltype(v)(1) + exp(-v)); });
  // σ'(x) = σ(x)·(1 − σ(x)): written with the output, so nothing is recomputed
  Tensor yd = y.detach();
  return record("sigmoid", y, {x}, [yd](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{
        cpu::map2(dy, yd, [](auto g, auto s) { return g * s * (decltype(s)(1) - s); })};
  });
}

Tensor tanh(const Tensor& x) {
  check_unary("tanh", x);
  switch (x.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA:
      return unary_on_cuda("tanh", cuda::Unary::Tanh, x, /*save_output=*/true);
  }
  Tensor y = cpu::map(x, [](auto v) { return tanh(v); });
  // tanh'(x) = 1 − tanh²(x)
  Tensor yd = y.detach();
  return record("tanh", y, {x}, [yd](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{
        cpu::map2(dy, yd, [](auto g, auto t) { return g * (decltype(t)(1) - t * t); })};
  });
}

Tensor exp(const Tensor& x_arg) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "exp");
  check_unary("exp", x);
  switch (x.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA:
      return unary_on_cuda("exp", cuda::Unary::Exp, x, /*save_output=*/true);
  }
  Tensor y = cpu::map(x, [](auto v) { return exp(v); });
  // exp'(x) = exp(x)
  Tensor yd = y.detach();
  return record("exp", y, {x}, [yd](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{cpu::map2(dy, yd, [](auto g, auto e) { return g * e; })};
  });
}

Tensor log(const Tensor& x_arg) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "log");
  check_unary("log", x);
  switch (x.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA:
      return unary_on_cuda("log", cuda::Unary::Log, x, /*save_output=*/false);
  }
  Tensor y = cpu::map(x, [](auto v) { return log(v); });
  // log'(x) = 1/x
  Tensor xd = x.detach();
  return record("log", y, {x}, [xd](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{cpu::map2(dy, xd, [](auto g, auto v) { return g / v; })};
  });
}

Tensor sqrt(const Tensor& x) {
  check_unary("sqrt", x);
  switch (x.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA:
      return unary_on_cuda("sqrt", cuda::Unary::Sqrt, x, /*save_output=*/true);
  }
  Tensor y = cpu::map(x, [](auto v) { return sqrt(v); });
  // sqrt'(x) = 1 / (2·sqrt(x))
  Tensor yd = y.detach();
  return record("sqrt", y, {x}, [yd](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{
        cpu::map2(dy, yd, [](auto g, auto s) { return g / (decltype(s)(2) * s); })};
  });
}

Tensor pow(const Tensor& x_arg, double p) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "pow");
  check_unary("pow", x);
  if (x.device() == Device::CUDA) {
    Tensor xc = x.contiguous().detach();
    return record("pow", cuda::pow(xc, p), {x}, [xc, p](const Tensor& dy, const NeedsGrad&) {
      return std::vector<Tensor>{cuda::pow_backward(dy, xc, p)};
    });
  }
  Tensor y = cpu::map(x, [p](auto v) { return std::pow(v, static_cast<decltype(v)>(p)); });
  // (x^p)' = p·x^(p−1)
  Tensor xd = x.detach();
  return record("pow", y, {x}, [xd, p](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{cpu::map2(dy, xd, [p](auto g, auto v) {
      using C = decltype(v);
      return g * static_cast<C>(p) * std::pow(v, static_cast<C>(p - 1));
    })};
  });
}

Tensor square(const Tensor& x_arg) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x = amp::autocast_cast(x_arg, "square");
  check_unary("square", x);
  switch (x.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA:
      return unary_on_cuda("square", cuda::Unary::Square, x, /*save_output=*/false);
  }
  Tensor y = cpu::map(x, [](auto v) { return v * v; });
  // (x²)' = 2x
  Tensor xd = x.detach();
  return record("square", y, {x}, [xd](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{
        cpu::map2(dy, xd, [](auto g, auto v) { return g * decltype(v)(2) * v; })};
  });
}

}  // namespace hg
