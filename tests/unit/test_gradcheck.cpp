// Finite-difference gradient checks in F64, one per op, all through tests/unit/gradcheck.h.
// (Convolution, pooling, normalisation and dropout: test_gradcheck_conv.cpp.)
#include "gradcheck.h"

using namespace hg;
using hg::test::gradcheck;
using hg::test::test_input;
using V = std::vector<Tensor>;

TEST_CASE("gradcheck: add sub mul div, same shape and broadcast") {
  Tensor a = test_input({3, 4}, 1), b = test_input({3, 4}, 2), c = test_input({4}, 3),
         d = test_input({3, 1}, 4, 0.5, 2.0);
  gradcheck("add", [](const V& v) { return add(v[0], v[1]); }, {a, b});
  gradcheck("add broadcast (3,4)+(4)", [](const V& v) { return add(v[0], v[1]); }, {a, c});
  gradcheck("sub broadcast (3,1)-(4)", [](const V& v) { return sub(v[0], v[1]); }, {d, c});
  gradcheck("mul", [](const V& v) { return mul(v[0], v[1]); }, {a, b});
  gradcheck("mul broadcast (3,1)*(3,4)", [](const V& v) { return mul(v[0], v[1]); }, {d, a});
  gradcheck("div", [](const V& v) { return div(v[0], v[1]); }, {a, test_input({3, 4}, 5, 0.5, 2)});
  gradcheck("div broadcast (3,4)/(3,1)", [](const V& v) { return div(v[0], v[1]); }, {a, d});
  gradcheck("div scalar tensor () / (3,4)", [](const V& v) { return div(v[0], v[1]); },
            {Tensor::scalar(1.5, DType::F64), test_input({3, 4}, 6, 0.5, 2)});
}

TEST_CASE("gradcheck: scalar ops and neg") {
  Tensor a = test_input({2, 5}, 7, 0.5, 2.0);
  gradcheck("add scalar", [](const V& v) { return add(v[0], 2.5); }, {a});
  gradcheck("sub scalar", [](const V& v) { return sub(v[0], 2.5); }, {a});
  gradcheck("rsub scalar", [](const V& v) { return rsub(2.5, v[0]); }, {a});
  gradcheck("mul scalar", [](const V& v) { return mul(v[0], -3.0); }, {a});
  gradcheck("div scalar", [](const V& v) { return div(v[0], 4.0); }, {a});
  gradcheck("rdiv scalar", [](const V& v) { return rdiv(3.0, v[0]); }, {a});
  gradcheck("neg", [](const V& v) { return neg(v[0]); }, {a});
}

TEST_CASE("gradcheck: unary functions") {
  // keep relu's inputs away from its kink at 0 (the derivative jumps there)
  Tensor a = test_input({3, 5}, 8, -2, 2);
  std::vector<double> av = a.to_double_vector();
  for (double& x : av)
    if (std::fabs(x) < 0.05) x = 0.3;
  a = Tensor::from_vector(av, a.shape());
  Tensor p = test_input({3, 5}, 9, 0.2, 3);
  gradcheck("relu", [](const V& v) { return relu(v[0]); }, {a});
  gradcheck("gelu", [](const V& v) { return gelu(v[0]); }, {a});
  gradcheck("sigmoid", [](const V& v) { return sigmoid(v[0]); }, {a});
  gradcheck("tanh", [](const V& v) { return hg::tanh(v[0]); }, {a});
  gradcheck("exp", [](const V& v) { return hg::exp(v[0]); }, {a});
  gradcheck("log", [](const V& v) { return hg::log(v[0]); }, {p});
  gradcheck("sqrt", [](const V& v) { return hg::sqrt(v[0]); }, {p});
  gradcheck("pow 2.5", [](const V& v) { return hg::pow(v[0], 2.5); }, {p});
  gradcheck("square", [](const V& v) { return square(v[0]); }, {a});
}

TEST_CASE("gradcheck: reductions") {
  Tensor a = test_input({2, 3, 4}, 10);
  gradcheck("sum", [](const V& v) { return sum(v[0]); }, {a});
  gradcheck("mean", [](const V& v) { return mean(v[0]); }, {a});
  for (int64_t d = -1; d < 3; ++d)
    for (bool keep : {false, true}) {
      gradcheck("sum dim " + std::to_string(d), [d, keep](const V& v) { return sum(v[0], d, keep); }, {a});
      gradcheck("mean dim " + std::to_string(d), [d, keep](const V& v) { return mean(v[0], d, keep); }, {a});
    }
}

TEST_CASE("gradcheck: shape ops and cast") {
  Tensor a = test_input({4, 6}, 11);
  gradcheck("reshape", [](const V& v) { return reshape(v[0], {2, 3, -1}); }, {a});
  gradcheck("flatten", [](const V& v) { return flatten(reshape(v[0], {2, 2, 6})); }, {a});
  gradcheck("slice", [](const V& v) { return v[0].slice(1, 3); }, {a});
  gradcheck("clone", [](const V& v) { return v[0].clone(); }, {a});
  // F64 -> F32 -> F64: the gradient is cast back, so it must be the identity up to F32 rounding
  hg::test::GradcheckOptions loose;
  loose.eps = 1e-3;   // perturb well above F32's resolution (2^-24 relative)...
  loose.atol = 1e-4;  // ...which still leaves ~1e-7/1e-3 = 1e-4 of rounding noise
  loose.rtol = 1e-4;
  gradcheck("cast F64->F32->F64", [](const V& v) { return v[0].to(DType::F32).to(DType::F64); }, {a}, loose);
}

TEST_CASE("gradcheck: matmul with every transpose combination, and linear") {
  Tensor a = test_input({3, 4}, 12), at = test_input({4, 3}, 13);
  Tensor b = test_input({4, 5}, 14), bt = test_input({5, 4}, 15);
  gradcheck("matmul", [](const V& v) { return matmul(v[0], v[1]); }, {a, b});
  gradcheck("matmul trans_a", [](const V& v) { return matmul(v[0], v[1], true, false); }, {at, b});
  gradcheck("matmul trans_b", [](const V& v) { return matmul(v[0], v[1], false, true); }, {a, bt});
  gradcheck("matmul trans_a trans_b", [](const V& v) { return matmul(v[0], v[1], true, true); }, {at, bt});
  Tensor x = test_input({5, 4}, 16), w = test_input({3, 4}, 17), bias = test_input({3}, 18);
  gradcheck("linear", [](const V& v) { return linear(v[0], v[1], v[2]); }, {x, w, bias});
  gradcheck("linear no bias", [](const V& v) { return linear(v[0], v[1]); }, {x, w});
}

TEST_CASE("gradcheck: softmax, log_softmax, cross_entropy, mse_loss") {
  Tensor a = test_input({3, 5}, 19, -3, 3);
  Tensor c = test_input({2, 3, 4}, 20, -3, 3);
  gradcheck("softmax", [](const V& v) { return softmax(v[0], -1); }, {a});
  gradcheck("softmax dim 1 of 3", [](const V& v) { return softmax(v[0], 1); }, {c});
  gradcheck("log_softmax", [](const V& v) { return log_softmax(v[0], 1); }, {a});
  gradcheck("log_softmax dim 0 of 3", [](const V& v) { return log_softmax(v[0], 0); }, {c});
  std::vector<int32_t> t = {4, 0, 2};
  gradcheck("cross_entropy", [t](const V& v) { return cross_entropy(v[0], t); }, {a});
  gradcheck("mse_loss", [](const V& v) { return mse_loss(v[0], v[1]); }, {a, test_input({3, 5}, 21)});
}

TEST_CASE("gradcheck: a composite graph (two-layer MLP with a shared weight)") {
  Tensor x = test_input({4, 3}, 22), w1 = test_input({5, 3}, 23), b1 = test_input({5}, 24),
         w2 = test_input({2, 5}, 25);
  std::vector<int32_t> t = {0, 1, 1, 0};
  gradcheck("mlp", [t](const V& v) {
    Tensor h = hg::tanh(linear(v[0], v[1], v[2]));
    Tensor logits = linear(h, v[3]);
    return add(cross_entropy(logits, t), mul(sum(mul(v[1], v[1])), 0.01));  // + weight decay
  }, {x, w1, b1, w2});
}
