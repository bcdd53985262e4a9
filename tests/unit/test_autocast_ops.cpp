// The output dtype of every op under autocast: a table of op × {outside, F16 region, BF16
// region}, run through the real ops of framework/ops (each has its one autocast line).
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "framework/amp/autocast.h"
#include "framework/ops/ops.h"

using hg::DType;
using hg::Tensor;

namespace {
Tensor filled(hg::Shape s, DType d, bool param = false) {
  hg::Generator gen(1);
  Tensor t = Tensor::uniform(s, 0.5, 1.5, gen).to(d);  // positive: log and pow are defined
  if (param) t.requires_grad_(true);
  return t;
}

struct Row {
  const char* name;
  std::function<Tensor()> run;  // builds its inputs and calls the op
  DType outside, in_f16, in_bf16;
};
}  // namespace

TEST_CASE("output dtype of every op outside and inside F16 and BF16 regions") {
  const DType F32 = DType::F32, F16 = DType::F16, BF16 = DType::BF16;
  const std::vector<int32_t> labels = {0, 2};
  const std::vector<Row> table = {
      // op                      the call, on F32 inputs unless said           out  F16  BF16
      {"matmul",        [] { return hg::matmul(filled({2, 3}, F32), filled({3, 4}, F32, true)); }, F32, F16, BF16},
      {"linear",        [] { return hg::linear(filled({2, 3}, F32), filled({4, 3}, F32, true), filled({4}, F32, true)); }, F32, F16, BF16},
      {"conv2d",        [] { return hg::conv2d(filled({1, 2, 5, 5}, F32), filled({3, 2, 3, 3}, F32, true), filled({3}, F32, true), 1, 1); }, F32, F16, BF16},
      {"relu (F32 in)", [] { return hg::relu(filled({2, 3}, F32)); }, F32, F32, F32},
      {"relu (F16 in)", [] { return hg::relu(filled({2, 3}, F16)); }, F16, F16, F16},
      {"max_pool2d (F16 in)", [] { return hg::max_pool2d(filled({1, 1, 4, 4}, F16), 2); }, F16, F16, F16},
      {"softmax (F16 in)",     [] { return hg::softmax(filled({2, 3}, F16), -1); }, F16, F32, F32},
      {"log_softmax (F16 in)", [] { return hg::log_softmax(filled({2, 3}, F16), -1); }, F16, F32, F32},
      {"cross_entropy (F16 logits)", [&] { return hg::cross_entropy(filled({2, 3}, F16), labels); }, F16, F32, F32},
      {"mse_loss (F16 in)", [] { return hg::mse_loss(filled({2, 3}, F16), filled({2, 3}, F16)); }, F16, F32, F32},
      {"sum (F16 in)",      [] { return hg::sum(filled({2, 3}, F16)); }, F16, F32, F32},
      // mean is on none of PyTorch 1.13's autocast lists: it keeps its input's dtype (and
      // accumulates in F32 inside, here as there).
      {"mean (F16 in)",     [] { return hg::mean(filled({2, 3}, F16)); }, F16, F16, F16},
      {"mean (F32 in)",     [] { return hg::mean(filled({2, 3}, F32)); }, F32, F32, F32},
      {"sum dim (F16 in)",  [] { return hg::sum(filled({2, 3}, F16), 1); }, F16, F32, F32},
      {"mean dim (F16 in)", [] { return hg::mean(filled({2, 3}, F16), 0); }, F16, F16, F16},
      {"exp (F16 in)",      [] { return hg::exp(filled({2, 3}, F16)); }, F16, F32, F32},
      {"log (F16 in)",      [] { return hg::log(filled({2, 3}, F16)); }, F16, F32, F32},
      {"pow (F16 in)",      [] { return hg::pow(filled({2, 3}, F16), 2.0); }, F16, F32, F32},
      // PyTorch's square is pow(x, 2) (aten/src/ATen/native/UnaryOps.cpp), and pow is F32.
      {"square (F16 in)",   [] { return hg::square(filled({2, 3}, F16)); }, F16, F32, F32},
      {"square (BF16 in)",  [] { return hg::square(filled({2, 3}, BF16)); }, BF16, F32, F32},
      {"batch_norm2d (F32 in)", [] {
         return hg::batch_norm2d(filled({2, 2, 3, 3}, F32), filled({2}, F32, true), filled({2}, F32, true),
                                 Tensor::zeros({2}), Tensor::ones({2}), true, 0.1, 1e-5); }, F32, F32, F32},
      {"add (F16, F16)",    [] { return hg::add(filled({2, 3}, F16), filled({2, 3}, F16)); }, F16, F16, F16},
      {"mul (F32, F32)",    [] { return hg::mul(filled({2, 3}, F32), filled({3}, F32)); }, F32, F32, F32},
  };
  for (const Row& r : table) {
    INFO(r.name);
    CHECK(r.run().dtype() == r.outside);
    {
      hg::amp::Autocast ac(DType::F16);
      CHECK(r.run().dtype() == r.in_f16);
    }
    {
      hg::amp::Autocast ac(DType::BF16);
      CHECK(r.run().dtype() == r.in_bf16);
    }
  }
}

TEST_CASE("batch norm keeps an F16 activation F16 inside a region, with F32 parameters") {
  hg::amp::Autocast ac(DType::F16);
  Tensor x = filled({2, 2, 3, 3}, DType::F16, true);
  Tensor gamma = filled({2}, DType::F32, true), beta = filled({2}, DType::F32, true);
  Tensor y = hg::batch_norm2d(x, gamma, beta, Tensor::zeros({2}), Tensor::ones({2}), true, 0.1, 1e-5);
  CHECK(y.dtype() == DType::F16);
  hg::sum(y).backward();  // the gradients come back in each input's own dtype
  CHECK(x.grad().dtype() == DType::F16);
  CHECK(gamma.grad().dtype() == DType::F32);
  CHECK(beta.grad().dtype() == DType::F32);
}

TEST_CASE("mixed inputs: an error outside a region, promoted to F32 inside") {
  const DType F32 = DType::F32, F16 = DType::F16, BF16 = DType::BF16;
  CHECK_THROWS(hg::add(filled({2}, F16), filled({2}, F32)));
  for (DType region : {F16, BF16}) {
    hg::amp::Autocast ac(region);
    CHECK(hg::add(filled({2}, F16), filled({2}, F32)).dtype() == F32);
    CHECK(hg::sub(filled({2}, F32), filled({2}, BF16)).dtype() == F32);
    CHECK(hg::mul(filled({2}, F16), filled({2}, BF16)).dtype() == F32);
    CHECK(hg::div(filled({2}, BF16), filled({2}, F32)).dtype() == F32);
  }
}

TEST_CASE("a 0-dim F32 tensor widens an F16 tensor in a region (PyTorch keeps F16: policy_differences)") {
  hg::amp::Autocast ac(DType::F16);
  CHECK(hg::mul(filled({2, 3}, DType::F16), Tensor::scalar(2.0)).dtype() == DType::F32);
  CHECK(hg::mul(filled({2, 3}, DType::F16), 2.0).dtype() == DType::F16);  // a number keeps the dtype
}

TEST_CASE("an F32 weight used by linear in an F16 region gets an F32 gradient") {
  Tensor w = filled({4, 3}, DType::F32, true);
  Tensor b = filled({4}, DType::F32, true);
  Tensor x = filled({2, 3}, DType::F32);
  Tensor loss;
  {
    hg::amp::Autocast ac(DType::F16);
    Tensor h = hg::linear(x, w, b);                      // (2, 4) F16
    loss = hg::cross_entropy(h, std::vector<int32_t>{1, 3});  // () F32
  }
  CHECK(loss.dtype() == DType::F32);
  loss.backward();
  REQUIRE(w.grad().defined());
  CHECK(w.grad().dtype() == DType::F32);
  CHECK(b.grad().dtype() == DType::F32);
  // The same gradient in plain F32, as the reference: F16 rounding of x, w and the
  // activations bounds the difference (a few F16 ULPs of values of order 1).
  Tensor w2 = w.detach().clone(), b2 = b.detach().clone();
  w2.requires_grad_(true);
  b2.requires_grad_(true);
  hg::cross_entropy(hg::linear(x, w2, b2), std::vector<int32_t>{1, 3}).backward();
  const auto g16 = w.grad().to_vector(), g32 = w2.grad().to_vector();
  double maxdiff = 0;
  for (size_t i = 0; i < g16.size(); ++i) maxdiff = std::max(maxdiff, double(std::fabs(g16[i] - g32[i])));
  INFO("max |dW_amp - dW_fp32| = " << maxdiff);
  CHECK(maxdiff < 1e-2);
}

TEST_CASE("the cast cache: a weight used by two linears casts once per region") {
  Tensor w = filled({3, 3}, DType::F32, true);
  Tensor x = filled({2, 3}, DType::F32);
  hg::amp::reset_cast_cache_stats();
  {
    hg::amp::Autocast ac(DType::F16);
    Tensor h = hg::linear(hg::linear(x, w), w);  // w twice; x and the activation are not cached
    CHECK(h.dtype() == DType::F16);
    auto s = hg::amp::cast_cache_stats();
    CHECK(s.hits == 1);
    CHECK(s.entries == 1);
    CHECK(s.casts == 2);  // x (F32 -> F16, not cached) and w once
  }
  CHECK(hg::amp::cast_cache_stats().entries == 0);
}
