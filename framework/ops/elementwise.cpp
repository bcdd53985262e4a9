#include "framework/amp/autocast.h"
#include "framework/ops/elementwise.h"

#include <fmt/format.h>

#include "framework/autograd/node.h"
#include "framework/cpu/copy.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/copy.h"
#include "framework/cuda/elementwise.h"
#include "framework/ops/check.h"
#include "framework/ops/shape.h"

namespace hg {

Shape broadcast_shapes(const char* op, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    // walk from the right
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      op_error(op, fmt::format("shapes {} and {} cannot broadcast: sizes {} and {} differ in "
                               "dim {} from the right, and neither is 1",
                               shape_str(a), shape_str(b), da, db, i));
    out[n - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Tensor sum_to_shape(const Tensor& g_in, const Shape& shape) {
  if (g_in.shape() == shape) return g_in;
  switch (g_in.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA:
      return cuda::sum_to(g_in.contiguous(), shape);
  }
  Tensor g = g_in.contiguous();
  const Shape& gs = g.shape();
  const int64_t nd = static_cast<int64_t>(gs.size());
  const int64_t off = nd - static_cast<int64_t>(shape.size());
  // target stride for each of g's dims: 0 where the dim was broadcast (or is missing)
  Shape tstride(nd, 0);
  Shape tcontig = contiguous_strides(shape);
  for (int64_t d = off; d < nd; ++d)
    tstride[d] = shape[d - off] == 1 && gs[d] != 1 ? 0 : tcontig[d - off];
  Tensor out = Tensor::empty(shape, g.dtype());
  visit_dtype(g.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    std::vector<C> acc(shape_numel(shape), C(0));  // accumulate in F32 (F64 for F64)
    const T* pg = g.data<T>();
    const int64_t n = g.numel();
    Shape idx(nd, 0);
    int64_t t = 0;
    for (int64_t i = 0; i < n; ++i) {
      acc[t] += load(pg[i]);
      // advance the multi-index (row-major) and the target offset with it
      for (int64_t d = nd - 1; d >= 0; --d) {
        t += tstride[d];
        if (++idx[d] < gs[d]) break;
        t -= tstride[d] * gs[d];
        idx[d] = 0;
      }
    }
    T* po = out.data<T>();
    for (size_t i = 0; i < acc.size(); ++i) po[i] = store<T>(acc[i]);
  });
  return out;
}

namespace {

// Entry checks shared by the four binary ops.
void check_binary(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a, "a");
  check_defined(op, b, "b");
  check_same_device(op, a, "a", b, "b");
  check_same_dtype(op, a, "a", b, "b");
}

// The kernel for "add", "sub", "mul", "div".
cuda::Binary binary_kind(const std::string& op) {
  return op == "add" ? cuda::Binary::Add : op == "sub" ? cuda::Binary::Sub
         : op == "mul" ? cuda::Binary::Mul : cuda::Binary::Div;
}

// out = f(a, b) elementwise, broadcasting a and b to their common shape.
template <class F> Tensor broadcast_map(const char* op, const Tensor& a, const Tensor& b, F f) {
  Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  switch (a.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA:
      return cuda::binary(op, binary_kind(op), a.contiguous(), b.contiguous(), shape);
  }
  if (a.shape() == shape && b.shape() == shape) return cpu::map2(a, b, f);
  // A one-element side is a scalar: no copy.
  if (a.shape() == shape && b.numel() == 1) {
    double s = b.item();
    return cpu::map(a, [f, s](auto x) { return f(x, static_cast<decltype(x)>(s)); });
  }
  if (b.shape() == shape && a.numel() == 1) {
    double s = a.item();
    return cpu::map(b, [f, s](auto y) { return f(static_cast<decltype(y)>(s), y); });
  }
  // General case: materialise both sides at the full shape, then one flat loop.
  return cpu::map2(expand(a, shape).contiguous(), expand(b, shape).contiguous(), f);
}

}  // namespace

Tensor add(const Tensor& a_arg, const Tensor& b_arg) {
  // autocast (framework/amp): mixed F16/F32 inputs promote to the wider; a no-op outside a region
  Tensor a = a_arg, b = b_arg;
  amp::autocast_promote(a, b, "add");
  check_binary("add", a, b);
  Tensor y = broadcast_map("add", a, b, [](auto x, auto z) { return x + z; });
  // d(a+b)/da = 1, d(a+b)/db = 1
  Shape as = a.shape(), bs = b.shape();
  return record("add", y, {a, b}, [as, bs](const Tensor& dy, const NeedsGrad& need) {
    return std::vector<Tensor>{need[0] ? sum_to_shape(dy, as) : Tensor(),
                               need[1] ? sum_to_shape(dy, bs) : Tensor()};
  });
}

Tensor sub(const Tensor& a_arg, const Tensor& b_arg) {
  // autocast (framework/amp): mixed F16/F32 inputs promote to the wider; a no-op outside a region
  Tensor a = a_arg, b = b_arg;
  amp::autocast_promote(a, b, "sub");
  check_binary("sub", a, b);
  Tensor y = broadcast_map("sub", a, b, [](auto x, auto z) { return x - z; });
  // d(a−b)/da = 1, d(a−b)/db = −1
  Shape as = a.shape(), bs = b.shape();
  return record("sub", y, {a, b}, [as, bs](const Tensor& dy, const NeedsGrad& need) {
    return std::vector<Tensor>{need[0] ? sum_to_shape(dy, as) : Tensor(),
                               need[1] ? sum_to_shape(neg(dy), bs) : Tensor()};
  });
}

Tensor mul(const Tensor& a_arg, const Tensor& b_arg) {
  // autocast (framework/amp): mixed F16/F32 inputs promote to the wider; a no-op outside a region
  Tensor a = a_arg, b = b_arg;
  amp::autocast_promote(a, b, "mul");
  check_binary("mul", a, b);
  Tensor y = broadcast_map("mul", a, b, [](auto x, auto z) { return x * z; });
  // d(a·b)/da = b, d(a·b)/db = a
  Tensor ad = a.detach(), bd = b.detach();
  return record("mul", y, {a, b}, [ad, bd](const Tensor& dy, const NeedsGrad& need) {
    return std::vector<Tensor>{need[0] ? sum_to_shape(mul(dy, bd), ad.shape()) : Tensor(),
                               need[1] ? sum_to_shape(mul(dy, ad), bd.shape()) : Tensor()};
  });
}

Tensor div(const Tensor& a_arg, const Tensor& b_arg) {
  // autocast (framework/amp): mixed F16/F32 inputs promote to the wider; a no-op outside a region
  Tensor a = a_arg, b = b_arg;
  amp::autocast_promote(a, b, "div");
  check_binary("div", a, b);
  Tensor y = broadcast_map("div", a, b, [](auto x, auto z) { return x / z; });
  // d(a/b)/da = 1/b, d(a/b)/db = −a/b²
  Tensor ad = a.detach(), bd = b.detach();
  return record("div", y, {a, b}, [ad, bd](const Tensor& dy, const NeedsGrad& need) {
    Tensor da, db;
    if (need[0]) da = sum_to_shape(div(dy, bd), ad.shape());
    if (need[1]) db = sum_to_shape(neg(div(mul(dy, ad), mul(bd, bd))), bd.shape());
    return std::vector<Tensor>{da, db};
  });
}

// ---- tensor–scalar ----------------------------------------------------------------------

namespace {
void check_unary(const char* op, const Tensor& a) { check_defined(op, a, "x"); }
}  // namespace

Tensor add(const Tensor& a, double s) {
  check_unary("add", a);
  Tensor y;
  switch (a.device()) {
    case Device::CPU:
      y = cpu::map(a, [s](auto x) { return x + static_cast<decltype(x)>(s); });
      break;
    case Device::CUDA:
      y = cuda::binary_scalar("add", cuda::Binary::Add, a.contiguous(), s);
      break;
  }
  // d(a+s)/da = 1
  return record("add_scalar", y, {a}, [](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{dy};
  });
}

Tensor sub(const Tensor& a, double s) { return add(a, -s); }

Tensor rsub(double s, const Tensor& a) {
  check_unary("rsub", a);
  Tensor y;
  switch (a.device()) {
    case Device::CPU:
      y = cpu::map(a, [s](auto x) { return static_cast<decltype(x)>(s) - x; });
      break;
    case Device::CUDA:
      y = cuda::binary_scalar("rsub", cuda::Binary::Sub, a.contiguous(), s, /*scalar_first=*/true);
      break;
  }
  // d(s−a)/da = −1
  return record("rsub_scalar", y, {a}, [](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{neg(dy)};
  });
}

Tensor mul(const Tensor& a, double s) {
  check_unary("mul", a);
  Tensor y;
  switch (a.device()) {
    case Device::CPU:
      y = cpu::map(a, [s](auto x) { return x * static_cast<decltype(x)>(s); });
      break;
    case Device::CUDA:
      y = cuda::binary_scalar("mul", cuda::Binary::Mul, a.contiguous(), s);
      break;
  }
  // d(a·s)/da = s
  return record("mul_scalar", y, {a}, [s](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{mul(dy, s)};
  });
}

Tensor div(const Tensor& a, double s) {
  check_unary("div", a);
  Tensor y;
  switch (a.device()) {
    case Device::CPU:
      y = cpu::map(a, [s](auto x) { return x / static_cast<decltype(x)>(s); });
      break;
    case Device::CUDA:
      y = cuda::binary_scalar("div", cuda::Binary::Div, a.contiguous(), s);
      break;
  }
  // d(a/s)/da = 1/s
  return record("div_scalar", y, {a}, [s](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{div(dy, s)};
  });
}

Tensor rdiv(double s, const Tensor& a) {
  check_unary("rdiv", a);
  Tensor y;
  switch (a.device()) {
    case Device::CPU:
      y = cpu::map(a, [s](auto x) { return static_cast<decltype(x)>(s) / x; });
      break;
    case Device::CUDA:
      y = cuda::binary_scalar("rdiv", cuda::Binary::Div, a.contiguous(), s, /*scalar_first=*/true);
      break;
  }
  // d(s/a)/da = −s/a²
  Tensor ad = a.detach();
  return record("rdiv_scalar", y, {a}, [s, ad](const Tensor& dy, const NeedsGrad&) {
    if (dy.device() == Device::CUDA) {  // the same formula from the ops, which dispatch;
      // a² in F32: in F16 it would overflow for |a| > 256 where the CPU's F32 math does not
      const Tensor a32 = ad.to(DType::F32);
      return std::vector<Tensor>{mul(div(dy.to(DType::F32), mul(a32, a32)), -s).to(dy.dtype())};
    }
    return std::vector<Tensor>{cpu::map2(dy, ad, [s](auto g, auto x) {
      return -g * static_cast<decltype(x)>(s) / (x * x);
    })};
  });
}

Tensor neg(const Tensor& a) {
  check_unary("neg", a);
  Tensor y;
  switch (a.device()) {
    case Device::CPU:
      y = cpu::map(a, [](auto x) { return -x; });
      break;
    case Device::CUDA:
      y = cuda::unary("neg", cuda::Unary::Neg, a.contiguous());
      break;
  }
  // d(−a)/da = −1
  return record("neg", y, {a}, [](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{neg(dy)};
  });
}

// ---- in place ---------------------------------------------------------------------------

void add_(Tensor& dst, const Tensor& src_in, double alpha) {
  check_defined("add_", dst, "dst");
  check_defined("add_", src_in, "src");
  if (dst.shape() != src_in.shape())
    op_error("add_", "dst " + shape_str(dst.shape()) + " and src " + shape_str(src_in.shape()) +
                         " must have the same shape");
  switch (dst.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA:
      return cuda::add_(dst, src_in, alpha);
  }
  if (!dst.is_contiguous()) op_error("add_", "dst must be contiguous");
  Tensor src = src_in.to(dst.dtype()).contiguous();
  visit_dtype(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    T* d = dst.data<T>();
    const T* in[2] = {d, src.data<T>()};
    const C a = static_cast<C>(alpha);
    cpu::map_n<T, 2>(in, d, dst.numel(), [a](C x, C y) { return x + a * y; });  // in place
  });
}

void mul_(Tensor& dst, double s) {
  check_defined("mul_", dst, "dst");
  switch (dst.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA:
      return cuda::mul_(dst, s);
  }
  if (!dst.is_contiguous()) op_error("mul_", "dst must be contiguous");
  visit_dtype(dst.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = compute_t<T>;
    T* d = dst.data<T>();
    const T* in[1] = {d};
    const C c = static_cast<C>(s);
    cpu::map_n<T, 1>(in, d, dst.numel(), [c](C x) { return x * c; });  // in place
  });
}

void copy_(Tensor& dst, const Tensor& src_in) {
  check_defined("copy_", dst, "dst");
  check_defined("copy_", src_in, "src");
  if (dst.shape() != src_in.shape())
    op_error("copy_", "dst " + shape_str(dst.shape()) + " and src " + shape_str(src_in.shape()) +
                          " must have the same shape");
  switch (dst.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA:
      return cuda::copy_(dst, src_in);
  }
  if (!dst.is_contiguous()) op_error("copy_", "dst must be contiguous");
  Tensor src = src_in.detach().to(Device::CPU).contiguous();
  cpu::convert(src.raw_data(), src.dtype(), dst.raw_data(), dst.dtype(), dst.numel());
}

void fill_(Tensor& dst, double value) {
  check_defined("fill_", dst, "dst");
  switch (dst.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA:
      return cuda::fill_(dst, value);
  }
  if (!dst.is_contiguous()) op_error("fill_", "dst must be contiguous");
  cpu::fill(dst.raw_data(), dst.dtype(), dst.numel(), value);
}

}  // namespace hg
