// conv2d, pooling and batch norm equal PyTorch's (tests/reference/ops/conv.json), plus
// dropout's statistics and the error messages of bad inputs.
#include "op_fixtures.h"

using namespace hg;
using hg::test::json;
using V = std::vector<Tensor>;

// batch norm's running statistics are updated in place: remember the last ones to compare
static std::vector<double> g_rm_after, g_rv_after;

static std::map<std::string, hg::test::OpFn> conv_ops(DType dt) {
  return {
      {"conv2d", [](const json& a, const V& v) {
         return conv2d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), a.at("stride"), a.at("padding")); }},
      {"max_pool2d", [](const json& a, const V& v) {
         return max_pool2d(v[0], a.at("kernel"), a.at("stride"), a.at("padding")); }},
      {"avg_pool2d", [](const json& a, const V& v) {
         return avg_pool2d(v[0], a.at("kernel"), a.at("stride"), a.at("padding")); }},
      {"global_avg_pool2d", [](const json&, const V& v) {
         // PyTorch's adaptive_avg_pool2d(x, 1) keeps (N, C, 1, 1); ours gives (N, C)
         return reshape(global_avg_pool2d(v[0]), {v[0].size(0), v[0].size(1), 1, 1}); }},
      {"batch_norm2d", [dt](const json& a, const V& v) {
         Tensor rm = Tensor::from_vector(a.at("running_mean").get<std::vector<double>>(), {v[0].size(1)}, dt);
         Tensor rv = Tensor::from_vector(a.at("running_var").get<std::vector<double>>(), {v[0].size(1)}, dt);
         Tensor y = batch_norm2d(v[0], v[1], v[2], rm, rv, a.at("training"), a.at("momentum"), a.at("eps"));
         g_rm_after = rm.to_double_vector();
         g_rv_after = rv.to_double_vector();
         return y; }},
  };
}

TEST_CASE("conv2d, pooling, batch_norm2d equal PyTorch (F64 and F32)") {
  hg::test::check_fixture_file("conv.json", conv_ops(DType::F64), DType::F64, 1e-12, 1e-10);
  hg::test::check_fixture_file("conv.json", conv_ops(DType::F32), DType::F32, 1e-5, 1e-4);
}

TEST_CASE("batch_norm2d updates running statistics as PyTorch does") {
  json fx = hg::test::load_fixture("conv.json");
  int seen = 0;
  for (const json& c : fx.at("cases")) {
    if (c.at("op") != "batch_norm2d") continue;
    V in;
    for (const json& j : c.at("inputs")) in.push_back(hg::test::tensor_of(j, DType::F64));
    conv_ops(DType::F64).at("batch_norm2d")(c.at("args"), in);
    auto rm = hg::test::compare(g_rm_after, c.at("running_mean_after").get<std::vector<double>>(), 1e-12, 1e-10);
    auto rv = hg::test::compare(g_rv_after, c.at("running_var_after").get<std::vector<double>>(), 1e-12, 1e-10);
    CHECK_MESSAGE(rm.ok, c.at("name").get<std::string>() << ": running_mean max diff " << rm.max_diff);
    CHECK_MESSAGE(rv.ok, c.at("name").get<std::string>() << ": running_var max diff " << rv.max_diff);
    ++seen;
  }
  CHECK(seen == 2);
}

TEST_CASE("dropout: keeps 1-p of the values, scaled by 1/(1-p), eval is the identity") {
  Generator gen(5);
  Tensor x = Tensor::ones({100000});
  std::vector<float> y = dropout(x, 0.25, true, gen).to_vector();
  int64_t kept = 0;
  for (float v : y) {
    CHECK_MESSAGE((v == 0.0f || v == doctest::Approx(1.0 / 0.75)), "value " << v);
    kept += v != 0.0f;
  }
  // Binomial(100000, 0.75): std ≈ 137, so ±1000 is over 7 sigma
  CHECK(std::abs(kept - 75000) < 1000);
  CHECK(dropout(x, 0.25, false, gen).same(x));
  Generator a(1), b(1);
  CHECK(dropout(x, 0.5, true, a).to_vector() == dropout(x, 0.5, true, b).to_vector());
}

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
#define CHECK_ERROR(expr, text)                                           \
  do {                                                                    \
    std::string msg_ = error_of([&] { (void)(expr); });                   \
    CHECK_MESSAGE(msg_.find(text) != std::string::npos, "got: " << msg_); \
  } while (0)

TEST_CASE("bad input: conv, pool and batch norm say what is wrong") {
  Tensor x = Tensor::zeros({2, 3, 8, 8}), w = Tensor::zeros({4, 3, 3, 3});
  CHECK_ERROR(conv2d(Tensor::zeros({3, 8, 8}), w), "conv2d: x must have 4 dimensions (N, C, H, W), got shape (3, 8, 8)");
  CHECK_ERROR(conv2d(x, Tensor::zeros({4, 2, 3, 3})), "conv2d: x has 3 channels (shape (2, 3, 8, 8)) but weight expects 2");
  CHECK_ERROR(conv2d(x, w, Tensor::zeros({3})), "conv2d: bias must have shape (4), got (3)");
  CHECK_ERROR(conv2d(x, Tensor::zeros({4, 3, 11, 11})), "conv2d: kernel 11x11 is larger than the padded input 8x8");
  CHECK_ERROR(conv2d(x, w.to(DType::F16)), "conv2d: dtype mismatch: x is F32, weight is F16");
  CHECK_ERROR(conv2d(x, w, Tensor(), 0), "conv2d: stride must be >= 1, got 0");
  CHECK_ERROR(max_pool2d(x, 3, 1, 2), "max_pool2d: padding 2 is more than half the kernel 3");
  CHECK_ERROR(avg_pool2d(Tensor::zeros({2, 8}), 2), "avg_pool2d: x must have 4 dimensions (N, C, H, W)");
  CHECK_ERROR(batch_norm2d(x, Tensor::ones({4}), Tensor(), Tensor(), Tensor(), true),
              "batch_norm2d: gamma must have shape (3) (one value per channel), got (4)");
  CHECK_ERROR(batch_norm2d(x, Tensor(), Tensor(), Tensor(), Tensor(), false),
              "batch_norm2d: eval mode needs running_mean and running_var");
  Generator g(0);
  CHECK_ERROR(dropout(x, 1.5, true, g), "dropout: p must be in [0, 1], got 1.5");
}
