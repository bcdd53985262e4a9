// GPU tests of the elementwise, unary (pow too), reduction and cast kernels (cuda/ops/) against CPU
// reference loops in F64, for F32, F16 and BF16 storage. A reference is computed from the
// inputs as stored (rounded to the dtype) and rounded once to the dtype, as the kernels do;
// tolerances are a couple of the dtype's ULPs (storage_rtol) plus a small atol.
#include "tests/gpu/typed_buffer.h"

#include "cuda/ops/amp.h"
#include "cuda/ops/elementwise.h"
#include "cuda/ops/optim.h"
#include "cuda/ops/reduce.h"
#include "cuda/ops/unary.h"
#include "cuda/runtime/memory.h"

#include <cmath>
#include <cstring>
#include <string>

using namespace hg::cuda;
using hg::test::Typed;
using hg::test::round_to;
using hg::test::storage_rtol;
using hg::test::uniform;

namespace {

std::string tag(const char* what, DType dt) { return std::string(what) + " " + dtype_name(dt); }

void test_binary(hg::test::Checker& t) {
  const std::vector<int64_t> sa = {4, 1, 5}, sb = {3, 1};  // -> (4, 3, 5)
  const Broadcast bc = make_broadcast(sa, sb);
  for (DType dt : hg::test::kAllDtypes) {
    const auto a = round_to(dt, uniform(20, -2, 2, 1)), b = round_to(dt, uniform(3, 0.5f, 2, 2));
    Typed da(dt, a), db(dt, b), dy(dt, bc.numel());
    const char* names[] = {"add", "sub", "mul", "div"};
    for (int op = 0; op < 4; ++op) {
      launch_binary(Binary(op), dt, da.ptr(), db.ptr(), dy.ptr(), bc);
      std::vector<float> want(bc.numel());
      int64_t i = 0;
      for (int x = 0; x < 4; ++x)
        for (int y = 0; y < 3; ++y)
          for (int z = 0; z < 5; ++z, ++i) {
            const double u = a[x * 5 + z], v = b[y];
            const double r = op == 0 ? u + v : op == 1 ? u - v : op == 2 ? u * v : u / v;
            want[i] = round_to(dt, float(r));
          }
      t.close(tag((std::string("broadcast ") + names[op] + " (4,1,5)x(3,1)").c_str(), dt), dy.to_host(), want, 1e-6, storage_rtol(dt));
    }
    // scalar forms: a - 3 and 3 / b
    launch_binary_scalar(Binary::Sub, dt, da.ptr(), 3.0f, dy.ptr(), 20);
    std::vector<float> want(20);
    for (int k = 0; k < 20; ++k) want[k] = round_to(dt, a[k] - 3.0f);
    t.close(tag("a - 3", dt), hg::test::head(dy.to_host(), 20), want, 1e-6, storage_rtol(dt));
    launch_binary_scalar(Binary::Div, dt, db.ptr(), 3.0f, dy.ptr(), 3, /*scalar_first=*/true);
    for (int k = 0; k < 3; ++k) want[k] = round_to(dt, 3.0f / b[k]);
    t.close(tag("3 / b", dt), hg::test::head(dy.to_host(), 3),
            hg::test::head(want, 3), 1e-6, storage_rtol(dt));

    // sum_to: the gradient of b (3, 1) from dY (4, 3, 5) sums over x and z.
    const auto g = round_to(dt, uniform(60, -1, 1, 3));
    Typed dg(dt, g), db_grad(dt, 3);
    Broadcast back = bc;
    for (int k = 0; k < back.ndim; ++k) back.a_stride[k] = bc.b_stride[k];  // target = b
    launch_sum_to(dt, dg.ptr(), back, db_grad.ptr(), 3);
    std::vector<float> wb(3, 0.0f);
    for (int y = 0; y < 3; ++y) {
      double s = 0;
      for (int x = 0; x < 4; ++x)
        for (int z = 0; z < 5; ++z) s += g[(x * 3 + y) * 5 + z];
      wb[y] = round_to(dt, float(s));
    }
    t.close(tag("sum_to (4,3,5) -> (3,1)", dt), db_grad.to_host(), wb, 1e-5, storage_rtol(dt));
  }
}

// f and its derivative in F64, with which value the backward receives (x or y), as unary.h says.
double ref_forward(Unary op, double x) {
  switch (op) {
    case Unary::Relu: return x > 0 ? x : 0;
    case Unary::Gelu: return x * 0.5 * (1 + std::erf(x / std::sqrt(2.0)));
    case Unary::Sigmoid: return 1 / (1 + std::exp(-x));
    case Unary::Tanh: return std::tanh(x);
    case Unary::Exp: return std::exp(x);
    case Unary::Log: return std::log(x);
    case Unary::Sqrt: return std::sqrt(x);
    case Unary::Square: return x * x;
    case Unary::Neg: return -x;
  }
  return 0;
}
double ref_derivative(Unary op, double x) {
  const double h = 1e-6;
  if (op == Unary::Relu) return x > 0 ? 1 : 0;
  return (ref_forward(op, x + h) - ref_forward(op, x - h)) / (2 * h);  // central difference, F64
}
// For ops whose backward takes the forward output y: f'(x) written in y (unary.h's table),
// evaluated in F64 on the y the kernel actually stored (so the rounding of y is not charged
// to the backward).
double derivative_from_output(Unary op, double y) {
  switch (op) {
    case Unary::Sigmoid: return y * (1 - y);
    case Unary::Tanh: return 1 - y * y;
    case Unary::Exp: return y;
    case Unary::Sqrt: return 1 / (2 * y);
    default: return NAN;
  }
}
bool saves_output(Unary op) {
  return op == Unary::Sigmoid || op == Unary::Tanh || op == Unary::Exp || op == Unary::Sqrt;
}

void test_unary(hg::test::Checker& t) {
  const char* names[] = {"relu", "gelu", "sigmoid", "tanh", "exp", "log", "sqrt", "square", "neg"};
  const int n = 1000;
  for (DType dt : hg::test::kAllDtypes)
    for (int k = 0; k < 9; ++k) {
      const Unary op = Unary(k);
      const bool positive = op == Unary::Log || op == Unary::Sqrt;
      const auto x = round_to(dt, uniform(n, positive ? 0.1f : -3.0f, 3.0f, 10 + k));
      const auto dy = round_to(dt, uniform(n, -1, 1, 30 + k));
      Typed dx_in(dt, x), ddy(dt, dy), y(dt, n), dx(dt, n);
      launch_unary_forward(op, dt, dx_in.ptr(), y.ptr(), n);
      std::vector<float> want_y(n), want_dx(n);
      const std::vector<float> got_y = y.to_host();
      for (int i = 0; i < n; ++i) {
        want_y[i] = round_to(dt, float(ref_forward(op, x[i])));
        const double d = saves_output(op) ? derivative_from_output(op, got_y[i]) : ref_derivative(op, x[i]);
        want_dx[i] = round_to(dt, float(dy[i] * d));
      }
      t.close(tag((std::string(names[k]) + " forward").c_str(), dt), got_y, want_y, 1e-6, storage_rtol(dt) + 2e-6);
      launch_unary_backward(op, dt, ddy.ptr(), saves_output(op) ? y.ptr() : dx_in.ptr(), dx.ptr(), n);
      t.close(tag((std::string(names[k]) + " backward").c_str(), dt), dx.to_host(), want_dx, 1e-5, storage_rtol(dt) + 1e-5);
    }
}

// pow has kernels of its own (it carries the exponent): x^p and dy · p · x^(p−1) vs F64, for an
// odd integer power of signed x and a negative fractional one of positive x; also 0^p.
void test_pow(hg::test::Checker& t) {
  const int n = 1000;
  for (DType dt : hg::test::kAllDtypes)
    for (float p : {3.0f, -0.5f}) {
      auto x = round_to(dt, uniform(n, p > 0 ? -3.0f : 0.25f, p > 0 ? 3.0f : 4.0f, 60));
      if (p > 0) x[0] = 0.0f;  // 0^3 = 0, its derivative 0
      const auto dy = round_to(dt, uniform(n, -1, 1, 61));
      Typed dx_in(dt, x), ddy(dt, dy), y(dt, n), dx(dt, n);
      launch_pow_forward(dt, dx_in.ptr(), y.ptr(), n, p);
      launch_pow_backward(dt, ddy.ptr(), dx_in.ptr(), dx.ptr(), n, p);
      std::vector<float> want_y(n), want_dx(n);
      for (int i = 0; i < n; ++i) {
        want_y[i] = round_to(dt, float(std::pow(double(x[i]), double(p))));
        want_dx[i] = round_to(dt, float(dy[i] * p * std::pow(double(x[i]), double(p) - 1)));
      }
      const std::string name = p > 0 ? "pow 3" : "pow -0.5";
      t.close(tag((name + " forward").c_str(), dt), y.to_host(), want_y, 1e-6, storage_rtol(dt) + 2e-6);
      t.close(tag((name + " backward").c_str(), dt), dx.to_host(), want_dx, 1e-5, storage_rtol(dt) + 1e-5);
    }
}

void test_reduce(hg::test::Checker& t) {
  for (DType dt : hg::test::kAllDtypes) {
    // sum_all over 1e5 elements (sum ~ 25000, inside F16's range): a running F16 sum would
    // stall at 2048 + ... once its ULP exceeds the addends; F32 accumulation does not. (2e4 on
    // a simulated GPU, sum ~ 5000: past 2048 too, at a fifth of the simulator's time.)
    const int64_t n = hg::test::simulated() ? 20000 : 100000;
    const auto x = round_to(dt, uniform(n, 0, 0.5f, 7));
    Typed dx(dt, x), y(dt, 1);
    launch_sum_all(dt, dx.ptr(), n, y.ptr());
    double s = 0;
    for (float v : x) s += v;
    const std::string of_n = " n=" + std::to_string(n);
    t.close(tag(("sum_all" + of_n).c_str(), dt), y.to_host(), {round_to(dt, float(s))}, 0, storage_rtol(dt) + 1e-6);
    launch_sum_all(dt, dx.ptr(), n, y.ptr(), 1.0f / n);
    t.close(tag(("mean_all" + of_n).c_str(), dt), y.to_host(), {round_to(dt, float(s / n))}, 0, storage_rtol(dt) + 1e-6);

    // sum along each dim of (6, 50, 7)
    const int A = 6, B = 50, C = 7;
    const auto z = round_to(dt, uniform(A * B * C, -1, 1, 8));
    Typed dz(dt, z);
    const int64_t dims[3] = {A, B, C};
    for (int dim = 0; dim < 3; ++dim) {
      int64_t outer = 1, inner = 1;
      for (int k = 0; k < dim; ++k) outer *= dims[k];
      for (int k = dim + 1; k < 3; ++k) inner *= dims[k];
      const int64_t d = dims[dim];
      Typed out(dt, outer * inner);
      launch_sum_dim(dt, dz.ptr(), outer, d, inner, out.ptr(), 0.5f);
      std::vector<float> want(outer * inner);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          double s2 = 0;
          for (int64_t k = 0; k < d; ++k) s2 += z[(o * d + k) * inner + i];
          want[o * inner + i] = round_to(dt, float(0.5 * s2));
        }
      t.close(tag(("sum_dim (6,50,7) dim " + std::to_string(dim) + " x0.5").c_str(), dt), out.to_host(), want, 1e-5, storage_rtol(dt));
      Typed back(dt, A * B * C);
      launch_sum_dim_backward(dt, out.ptr(), outer, d, inner, back.ptr(), 2.0f);
      const std::vector<float> o_host = out.to_host();
      std::vector<float> wb(A * B * C);
      for (int64_t j = 0; j < A * B * C; ++j) wb[j] = round_to(dt, 2.0f * o_host[(j / (d * inner)) * inner + j % inner]);
      t.close(tag(("sum_dim_backward dim " + std::to_string(dim)).c_str(), dt), back.to_host(), wb, 0, 0);
    }
  }
}

// x[0..n) = v rounded to dt, through the runtime's device_fill (one element's bits, copied n times).
void fill_value(DType dt, void* x, float v, int64_t n) {
  unsigned char e[4];
  if (dt == DType::F32) std::memcpy(e, &v, 4);
  else if (dt == DType::F16) { const __half h = __float2half_rn(v); std::memcpy(e, &h, 2); }
  else { const __nv_bfloat16 h = __float2bfloat16_rn(v); std::memcpy(e, &h, 2); }
  device_fill(x, e, dtype_size(dt), n);
}

void test_inplace_and_cast(hg::test::Checker& t) {
  for (DType dt : hg::test::kAllDtypes) {
    const auto a = round_to(dt, uniform(333, -1, 1, 40)), b = round_to(dt, uniform(333, -1, 1, 41));
    Typed da(dt, a), db(dt, b);
    launch_axpy(dt, da.ptr(), db.ptr(), -0.5f, 333);
    std::vector<float> want(333);
    for (int i = 0; i < 333; ++i) want[i] = round_to(dt, a[i] - 0.5f * b[i]);
    t.close(tag("axpy", dt), da.to_host(), want, 1e-7, storage_rtol(dt));
    launch_scale(dt, db.ptr(), 4.0f, 333);  // a power of two: exact
    for (int i = 0; i < 333; ++i) want[i] = b[i] * 4.0f;
    t.exact(tag("scale x4", dt), db.to_host(), want);
    fill_value(dt, db.ptr(), 1.5f, 333);
    t.exact(tag("fill 1.5", dt), db.to_host(), std::vector<float>(333, 1.5f));
    // The loss scaler's kernels (amp.h): one flag on the device, zeroed by the caller.
    hg::test::DeviceBuffer<int> flag(std::vector<int>{0});
    launch_check_finite(dt, db.ptr(), 333, flag.ptr);
    t.expect(tag("check_finite: finite", dt), flag.to_host()[0] == 0);
    fill_value(dt, db.ptr(), INFINITY, 1);
    launch_check_finite(dt, db.ptr(), 333, flag.ptr);
    t.expect(tag("check_finite: one inf", dt), flag.to_host()[0] == 1);
    hg::test::DeviceBuffer<int> flag2(std::vector<int>{0});
    launch_unscale_and_check(dt, db.ptr(), 333, 0.5f, flag2.ptr);
    std::vector<float> halved(333, 0.75f);
    halved[0] = INFINITY;
    t.exact(tag("unscale_and_check x0.5", dt), db.to_host(), halved);
    t.expect(tag("unscale_and_check: the inf is found", dt), flag2.to_host()[0] == 1);
    hg::test::DeviceBuffer<float> top(std::vector<float>{0.0f});
    launch_max_abs_finite(dt, db.ptr(), 333, top.ptr);
    t.expect(tag("max_abs_finite skips the inf", dt), top.to_host()[0] == 0.75f);
  }
  // Casts: every pair, on values that exercise rounding, overflow and subnormals.
  std::vector<float> v = uniform(500, -70000, 70000, 50);
  const float specials[] = {0.0f, -0.0f, 1.0f / 3, 65504.0f, 65520.0f, 1e-8f, 6e-8f, 3e38f, INFINITY, -INFINITY};
  for (size_t i = 0; i < sizeof(specials) / sizeof(float); ++i) v[i] = specials[i];
  for (DType from : hg::test::kAllDtypes)
    for (DType to : hg::test::kAllDtypes) {
      const auto x = round_to(from, v);
      Typed dx(from, x), dy(to, x.size());
      launch_cast(from, dx.ptr(), to, dy.ptr(), x.size());
      t.exact(std::string("cast ") + dtype_name(from) + " -> " + dtype_name(to), dy.to_host(), round_to(to, x));
    }
}

void run(hg::test::Checker& t) {
  test_binary(t);
  test_unary(t);
  test_pow(t);
  test_reduce(t);
  test_inplace_and_cast(t);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
