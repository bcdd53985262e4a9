// Autograd: backward order, accumulation, NoGradGuard, gradient dtype, graph printing.
#include <doctest/doctest.h>

#include <string>

#include "framework/halfgrad.h"

using namespace hg;

static Tensor leaf(std::vector<double> v, Shape s, DType t = DType::F64) {
  return Tensor::from_vector(v, s, t).requires_grad_();
}

TEST_CASE("chain rule through a small graph: y = a·b + a") {
  Tensor a = leaf({1, 2, 3}, {3});
  Tensor b = leaf({4, 5, 6}, {3});
  Tensor y = a * b + a;  // a is used twice: its gradients must add
  y.backward(Tensor::ones({3}, DType::F64));
  // dy/da = b + 1, dy/db = a
  CHECK(a.grad().to_double_vector() == std::vector<double>{5, 6, 7});
  CHECK(b.grad().to_double_vector() == std::vector<double>{1, 2, 3});
  CHECK(a.grad().dtype() == DType::F64);
}

TEST_CASE("gradients accumulate across backward calls until zero_grad") {
  Tensor a = leaf({2}, {1});
  Tensor y1 = a * a;  // dy/da = 2a = 4
  y1.backward();
  CHECK(a.grad().item() == 4.0);
  Tensor y2 = a * 3.0;  // + 3
  y2.backward();
  CHECK(a.grad().item() == 7.0);
  a.zero_grad();
  CHECK(a.grad().item() == 0.0);
  (a * 5.0).backward();
  CHECK(a.grad().item() == 5.0);
}

TEST_CASE("broadcast inputs get summed gradients") {
  Tensor col = leaf({1, 2, 3}, {3, 1});
  Tensor row = leaf({10, 20, 30, 40}, {1, 4});
  Tensor y = col * row;  // (3, 4)
  CHECK(y.shape() == Shape{3, 4});
  y.backward(Tensor::ones({3, 4}, DType::F64));
  // dL/dcol[i] = Σ_j row[j] = 100; dL/drow[j] = Σ_i col[i] = 6
  CHECK(col.grad().to_double_vector() == std::vector<double>{100, 100, 100});
  CHECK(row.grad().to_double_vector() == std::vector<double>{6, 6, 6, 6});
}

TEST_CASE("NoGradGuard records nothing") {
  Tensor a = leaf({1}, {1});
  {
    NoGradGuard ng;
    Tensor y = a * 2.0;
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
  }
  Tensor z = a * 2.0;
  CHECK(z.requires_grad());
  CHECK_FALSE(z.is_leaf());
}

TEST_CASE("a parameter's gradient has the parameter's dtype (cast backward)") {
  Tensor w = leaf({0.5, -1.5}, {2}, DType::F32);
  Tensor x = Tensor::from_vector(std::vector<float>{3, 4}, {2}, DType::F16);
  Tensor y = w.to(DType::F16) * x;  // F16 math
  CHECK(y.dtype() == DType::F16);
  y.backward(Tensor::ones({2}, DType::F16));
  CHECK(w.grad().dtype() == DType::F32);
  CHECK(w.grad().to_vector() == std::vector<float>{3, 4});
}

TEST_CASE("backward errors are explained") {
  Tensor a = Tensor::ones({2});
  std::string msg;
  try {
    (a * 2.0).backward();
  } catch (const std::exception& e) {
    msg = e.what();
  }
  CHECK(msg.find("backward() with no argument needs a single-element tensor") != std::string::npos);
  try {
    Tensor::ones({1}).backward();
  } catch (const std::exception& e) {
    msg = e.what();
  }
  CHECK(msg.find("does not require grad") != std::string::npos);
}

TEST_CASE("graph printer: text and graphviz dot") {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2}, {2}).set_name("x");
  Tensor w = leaf({3, 4}, {2}, DType::F32).set_name("w");
  Tensor y = (x * w + 1.0).set_name("y");
  std::string text = graph_to_text(y);
  MESSAGE("\n" << text);
  CHECK(text.find("leaf x") != std::string::npos);
  CHECK(text.find("leaf w") != std::string::npos);
  CHECK(text.find("#1 mul(x, w)") != std::string::npos);
  CHECK(text.find("#2 add_scalar(#1)") != std::string::npos);
  CHECK(text.find("<- y") != std::string::npos);
  std::string dot = graph_to_dot(y);
  CHECK(dot.rfind("digraph halfgrad {", 0) == 0);
  CHECK(dot.find("mul") != std::string::npos);
  CHECK(dot.find("->") != std::string::npos);
}
