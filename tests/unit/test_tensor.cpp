// Tensor: creation, shape and strides, views, dtype conversion, data access, printing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "framework/halfgrad.h"
#include "framework/version.h"

using namespace hg;

// The exception message of `expr`, or "" when it does not throw.
template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("creation: zeros, ones, full, arange, from_vector") {
  Tensor z = Tensor::zeros({2, 3});
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.numel() == 6);
  CHECK(z.dim() == 2);
  CHECK(z.size(-1) == 3);
  CHECK(z.strides() == Shape{3, 1});
  CHECK(z.dtype() == DType::F32);
  CHECK(z.device() == Device::CPU);
  for (float v : z.to_vector()) CHECK(v == 0.0f);
  for (float v : Tensor::ones({4}).to_vector()) CHECK(v == 1.0f);
  for (double v : Tensor::full({2, 2}, -2.5, DType::F64).to_double_vector()) CHECK(v == -2.5);
  std::vector<float> a = Tensor::arange(5).to_vector();
  CHECK(a == std::vector<float>{0, 1, 2, 3, 4});
  Tensor t = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  CHECK(t.data<float>()[3] == 4.0f);
  CHECK(Tensor::scalar(7.0).item() == 7.0);
  CHECK(Tensor::scalar(7.0).dim() == 0);
  CHECK(error_of([] { Tensor::from_vector(std::vector<float>{1, 2, 3}, {2, 2}); })
            .find("3 values do not fill shape (2, 2)") != std::string::npos);
}

TEST_CASE("dtype conversion rounds like framework/dtype (nearest even)") {
  std::vector<float> v = {0.1f, -3.14159f, 65504.0f, 70000.0f, 1e-8f, 1.0f / 3};
  Tensor h = Tensor::from_vector(v, {6}, DType::F16);
  Tensor b = Tensor::from_vector(v, {6}, DType::BF16);
  CHECK(h.nbytes() == 12);
  for (size_t i = 0; i < v.size(); ++i) {
    CHECK(h.data<half>()[i].bits == float_to_half_bits(v[i]));
    CHECK(b.data<bfloat16>()[i].bits == float_to_bf16_bits(v[i]));
  }
  // widening is exact: F16 -> F32 gives back exactly the F16 value
  std::vector<float> back = h.to(DType::F32).to_vector();
  for (size_t i = 0; i < v.size(); ++i) CHECK(back[i] == half_bits_to_float(float_to_half_bits(v[i])));
  CHECK(std::isinf(back[3]));  // 70000 overflows FP16
  // F64 -> F32 -> F64 keeps float precision
  Tensor d = Tensor::from_vector(std::vector<double>{0.1}, {1});
  CHECK(d.dtype() == DType::F64);
  CHECK(d.to(DType::F32).item() == static_cast<double>(0.1f));
}

TEST_CASE("data<T> checks dtype") {
  Tensor t = Tensor::zeros({2}, DType::F16);
  CHECK(error_of([&] { t.data<float>(); }) == "data: tensor holds F16, asked for F32");
  CHECK(error_of([&] { Tensor::zeros({2}).item(); })
            .find("needs a tensor with exactly one element, got shape (2)") != std::string::npos);
}

TEST_CASE("reshape and slice are views of the same storage") {
  Tensor t = Tensor::arange(12).reshape({3, 4});
  Tensor r = t.reshape({2, -1});
  CHECK(r.shape() == Shape{2, 6});
  r.data<float>()[7] = 100.0f;  // writes through to t
  CHECK(t.data<float>()[7] == 100.0f);
  Tensor s = t.slice(1, 3);
  CHECK(s.shape() == Shape{2, 4});
  CHECK(s.is_contiguous());
  CHECK(s.data<float>()[0] == 4.0f);
  CHECK(s.data<float>()[3] == 100.0f);
  CHECK(error_of([&] { t.reshape({5, -1}); }).find("cannot infer -1") != std::string::npos);
  CHECK(error_of([&] { t.reshape({5, 2}); }).find("shape (5, 2) holds 10 elements") !=
        std::string::npos);
  CHECK(error_of([&] { t.slice(2, 4); }).find("out of range for dim 0 of size 3") !=
        std::string::npos);
  CHECK(flatten(Tensor::zeros({2, 3, 4, 5})).shape() == Shape{2, 60});
}

TEST_CASE("contiguous copies a strided view in row-major order") {
  Tensor t = Tensor::arange(6).reshape({2, 3});
  Tensor e = expand(Tensor::arange(3).reshape({1, 3}), {2, 3});  // rows repeat
  CHECK_FALSE(e.is_contiguous());
  CHECK(e.contiguous().to_vector() == std::vector<float>{0, 1, 2, 0, 1, 2});
  Tensor c = t.clone();
  c.data<float>()[0] = 9;
  CHECK(t.data<float>()[0] == 0);  // clone owns its storage
}

TEST_CASE("Generator: seeded, state can be saved and restored") {
  Generator g(42);
  Tensor a = Tensor::randn({1000}, g);
  uint64_t saved = g.state();
  Tensor b = Tensor::randn({10}, g);
  g.set_state(saved);
  Tensor c = Tensor::randn({10}, g);
  CHECK(b.to_vector() == c.to_vector());
  Generator g2(42);
  CHECK(Tensor::randn({1000}, g2).to_vector() == a.to_vector());
  // N(0,1): with 100000 draws the sample mean has std 0.0032 and the sample variance ~0.0045
  Generator g3(7);
  std::vector<double> v = Tensor::randn({100000}, g3, DType::F64).to_double_vector();
  double m = 0, s2 = 0;
  for (double x : v) m += x;
  m /= v.size();
  for (double x : v) s2 += (x - m) * (x - m);
  s2 /= v.size();
  CHECK(std::fabs(m) < 0.02);
  CHECK(std::fabs(s2 - 1.0) < 0.03);
  std::vector<double> u = Tensor::uniform({10000}, -2, 3, g3, DType::F64).to_double_vector();
  double lo = 1e9, hi = -1e9;
  for (double x : u) lo = std::min(lo, x), hi = std::max(hi, x);
  CHECK(lo >= -2);
  CHECK(hi < 3);
  CHECK(lo < -1.99);
  CHECK(hi > 2.99);
}

TEST_CASE("printing shows shape, dtype, device and abbreviates long dims") {
  std::string s = Tensor::arange(6).reshape({2, 3}).str();
  CHECK(s.find("shape=(2, 3), dtype=F32, device=cpu") != std::string::npos);
  CHECK(s.find("[[0.0000, 1.0000, 2.0000],\n [3.0000, 4.0000, 5.0000]]") != std::string::npos);
  std::string l = Tensor::arange(100).str();
  CHECK(l.find("[0.0000, 1.0000, 2.0000, ..., 97.0000, 98.0000, 99.0000]") != std::string::npos);
  CHECK(Tensor::ones({2}, DType::BF16).str().find("dtype=BF16") != std::string::npos);
}

TEST_CASE("device: a CPU-only build refuses CUDA with one clear message") {
  if (cuda_available()) return;  // a GPU machine moves the tensor instead (tests/gpu)
  if (!built_with_cuda())
    CHECK(error_of([] { Tensor::zeros({2}).to(Device::CUDA); }) == "built without CUDA; use --device cpu");
  CHECK(parse_device("cpu") == Device::CPU);
  CHECK(error_of([] { parse_device("tpu"); }) == "unknown device 'tpu' (expected cpu or cuda)");
  CHECK(parse_dtype("bf16") == DType::BF16);
}
