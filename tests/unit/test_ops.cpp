// Forward and backward of every op equal PyTorch's (fixtures from tests/reference/ops/),
// in F64 (tight) and F32 (float rounding); plus the error messages of bad inputs.
// Convolution, pooling and batch norm: test_ops_conv.cpp. F16/BF16: test_ops_lowp.cpp.
#include <omp.h>

#include "op_fixtures.h"

using namespace hg;
using hg::test::json;
using V = std::vector<Tensor>;

static std::map<std::string, hg::test::OpFn> basic_ops() {
  return {
      {"add", [](const json&, const V& v) { return add(v[0], v[1]); }},
      {"sub", [](const json&, const V& v) { return sub(v[0], v[1]); }},
      {"mul", [](const json&, const V& v) { return mul(v[0], v[1]); }},
      {"div", [](const json&, const V& v) { return div(v[0], v[1]); }},
      {"add_scalar", [](const json& a, const V& v) { return add(v[0], a.at("s").get<double>()); }},
      {"mul_scalar", [](const json& a, const V& v) { return mul(v[0], a.at("s").get<double>()); }},
      {"rsub_scalar", [](const json& a, const V& v) { return rsub(a.at("s").get<double>(), v[0]); }},
      {"rdiv_scalar", [](const json& a, const V& v) { return rdiv(a.at("s").get<double>(), v[0]); }},
      {"relu", [](const json&, const V& v) { return relu(v[0]); }},
      {"gelu", [](const json&, const V& v) { return gelu(v[0]); }},
      {"sigmoid", [](const json&, const V& v) { return sigmoid(v[0]); }},
      {"tanh", [](const json&, const V& v) { return hg::tanh(v[0]); }},
      {"exp", [](const json&, const V& v) { return hg::exp(v[0]); }},
      {"log", [](const json&, const V& v) { return hg::log(v[0]); }},
      {"sqrt", [](const json&, const V& v) { return hg::sqrt(v[0]); }},
      {"pow", [](const json& a, const V& v) { return hg::pow(v[0], a.at("p").get<double>()); }},
      {"sum", [](const json&, const V& v) { return sum(v[0]); }},
      {"mean", [](const json&, const V& v) { return mean(v[0]); }},
      {"sum_dim", [](const json& a, const V& v) { return sum(v[0], a.at("dim"), a.at("keepdim")); }},
      {"mean_dim", [](const json& a, const V& v) { return mean(v[0], a.at("dim"), a.at("keepdim")); }},
      {"reshape", [](const json& a, const V& v) { return reshape(v[0], a.at("shape").get<Shape>()); }},
      {"flatten", [](const json&, const V& v) { return flatten(v[0]); }},
      {"slice", [](const json& a, const V& v) { return v[0].slice(a.at("begin"), a.at("end")); }},
      {"neg", [](const json&, const V& v) { return neg(v[0]); }},
      {"square", [](const json&, const V& v) { return square(v[0]); }},
      {"sub_scalar", [](const json& a, const V& v) { return sub(v[0], a.at("s").get<double>()); }},
      {"div_scalar", [](const json& a, const V& v) { return div(v[0], a.at("s").get<double>()); }},
      // the fixture's output is the 16-bit value widened; ours stays 16-bit (compared as doubles)
      {"cast", [](const json& a, const V& v) { return v[0].to(parse_dtype(a.at("dtype"))); }},
      {"matmul", [](const json& a, const V& v) { return matmul(v[0], v[1], a.at("trans_a"), a.at("trans_b")); }},
      {"linear", [](const json&, const V& v) { return linear(v[0], v[1], v.size() > 2 ? v[2] : Tensor()); }},
      {"softmax", [](const json& a, const V& v) { return softmax(v[0], a.at("dim")); }},
      {"log_softmax", [](const json& a, const V& v) { return log_softmax(v[0], a.at("dim")); }},
      {"cross_entropy", [](const json& a, const V& v) {
         return cross_entropy(v[0], a.at("targets").get<std::vector<int32_t>>()); }},
      {"mse_loss", [](const json&, const V& v) { return mse_loss(v[0], v[1]); }},
  };
}

TEST_CASE("ops equal PyTorch: elementwise, unary, reductions, reshape") {
  hg::test::check_fixture_file("basic.json", basic_ops(), DType::F64, 1e-12, 1e-10);
  hg::test::check_fixture_file("basic.json", basic_ops(), DType::F32, 1e-6, 1e-5);
}

TEST_CASE("ops equal PyTorch: matmul and linear") {
  hg::test::check_fixture_file("matmul.json", basic_ops(), DType::F64, 1e-12, 1e-10);
  hg::test::check_fixture_file("matmul.json", basic_ops(), DType::F32, 1e-5, 1e-5);
}

TEST_CASE("ops equal PyTorch: softmax, log_softmax, cross_entropy, mse_loss") {
  hg::test::check_fixture_file("softmax_loss.json", basic_ops(), DType::F64, 1e-12, 1e-10);
  hg::test::check_fixture_file("softmax_loss.json", basic_ops(), DType::F32, 1e-5, 1e-5);
}

// ---- bad input: messages a student understands -------------------------------------------

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
#define CHECK_ERROR(expr, text)                                        \
  do {                                                                 \
    std::string msg_ = error_of([&] { (void)(expr); });                \
    CHECK_MESSAGE(msg_.find(text) != std::string::npos, "got: " << msg_); \
  } while (0)

TEST_CASE("bad input: shape and dtype mismatches are named") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5}), h = Tensor::zeros({2, 3}, DType::F16);
  CHECK_ERROR(add(a, b), "add: shapes (2, 3) and (4, 5) cannot broadcast");
  CHECK_ERROR(mul(a, h), "mul: dtype mismatch: a is F32, b is F16; cast one with .to(DType::...)");
  CHECK_ERROR(matmul(a, b), "matmul: inner sizes differ: op(a) is (2, 3) and op(b) is (4, 5)");
  CHECK_ERROR(matmul(Tensor::zeros({2}), b), "matmul: a must have 2 dimensions (M, K), got shape (2)");
  CHECK_ERROR(linear(a, Tensor::zeros({4, 5})),
              "linear: x has 3 features (shape (2, 3)) but weight expects 5");
  CHECK_ERROR(linear(a, Tensor::zeros({4, 3}), Tensor::zeros({3})), "linear: bias must have shape (4), got (3)");
  CHECK_ERROR(cross_entropy(a, std::vector<int32_t>{0}), "cross_entropy: logits have 2 rows");
  CHECK_ERROR(cross_entropy(a, std::vector<int32_t>{0, 3}),
              "cross_entropy: target 3 of row 1 is not a class id in [0, 3)");
  CHECK_ERROR(cross_entropy(a, Tensor::from_vector(std::vector<float>{0, 1.5f}, {2})),
              "cross_entropy: target 1 = 1.5 is not an integer class id");
  CHECK_ERROR(mse_loss(a, Tensor::zeros({3, 2})), "mse_loss: pred has shape (2, 3) but target has shape (3, 2)");
  CHECK_ERROR(softmax(a, 2), "softmax: dim 2 is out of range for a tensor with 2 dimensions");
  CHECK_ERROR(sum(a, -3), "sum: dim -3 is out of range");
  CHECK_ERROR(add(a, Tensor()), "add: b is an undefined tensor");
}

TEST_CASE("cross_entropy is stable for huge logits, and takes tensor targets") {
  // log Σ e^x with x = 1000 overflows if computed naively; the loss here is exactly log 2
  Tensor l = Tensor::from_vector(std::vector<float>{1000, 1000, -1000, 1000}, {2, 2});
  Tensor loss = cross_entropy(l, Tensor::from_vector(std::vector<float>{0, 1}, {2}));
  CHECK(loss.item() == doctest::Approx((std::log(2.0) + 0.0) / 2).epsilon(1e-6));
}

TEST_CASE("sums and losses give the same bits on 1 thread and on several (determinism)") {
  Generator g(11);
  Tensor x = Tensor::randn({300000}, g);  // large enough to run in parallel
  Tensor logits = Tensor::randn({40000, 3}, g);
  std::vector<int32_t> t(40000);
  for (auto& v : t) v = static_cast<int32_t>(g.randint(3));
  auto run = [&] {
    return std::vector<double>{sum(x).item(), mean(x).item(), mse_loss(x, x * 0.5).item(),
                               cross_entropy(logits, t).item()};
  };
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<double> one = run();
  omp_set_num_threads(std::max(2, threads));
  std::vector<double> many = run();
  omp_set_num_threads(threads);
  for (size_t i = 0; i < one.size(); ++i)
    CHECK_MESSAGE(one[i] == many[i], "result " << i << ": " << one[i] << " vs " << many[i]);
}
