// The ops a GPT block needs: embedding, layer_norm, batched matmul, the views transpose /
// permute / narrow / split / expand, and the causal softmax of attention.
// Each is (1) matched to PyTorch (tests/reference/ops/gpt_ops.json) in F64 and F32,
// (2) gradchecked in F64, (3) run in F16/BF16 as "F32 math, one rounding", (4) given its
// autocast dtype, and (5) refuses bad input with a message that names it.
#include <omp.h>

#include <cstring>

#include "framework/amp/autocast.h"
#include "op_fixtures.h"

using namespace hg;
using hg::test::gradcheck;
using hg::test::json;
using hg::test::test_input;
using V = std::vector<Tensor>;

namespace {

std::map<std::string, hg::test::OpFn> gpt_ops() {
  return {
      {"embedding", [](const json& a, const V& v) {
         return embedding(v[0], a.at("ids").get<std::vector<int32_t>>(), a.at("ids_shape").get<Shape>()); }},
      {"layer_norm", [](const json& a, const V& v) {
         return v.size() == 3 ? layer_norm(v[0], v[1], v[2], a.at("eps")) : layer_norm(v[0], Tensor(), Tensor(), a.at("eps")); }},
      {"matmul", [](const json& a, const V& v) { return matmul(v[0], v[1], a.at("trans_a"), a.at("trans_b")); }},
      {"transpose", [](const json& a, const V& v) { return transpose(v[0], a.at("dim0"), a.at("dim1")); }},
      {"permute", [](const json& a, const V& v) { return permute(v[0], a.at("dims").get<std::vector<int64_t>>()); }},
      {"transpose_reshape", [](const json& a, const V& v) {
         return reshape(transpose(v[0], a.at("dim0"), a.at("dim1")), a.at("shape").get<Shape>()); }},
      {"narrow", [](const json& a, const V& v) { return narrow(v[0], a.at("dim"), a.at("start"), a.at("length")); }},
      {"split", [](const json& a, const V& v) {
         return split(v[0], a.at("size"), a.at("dim")).at(a.at("index").get<size_t>()); }},
      {"expand", [](const json& a, const V& v) { return expand(v[0], a.at("shape").get<Shape>()); }},
      {"causal_softmax", [](const json& a, const V& v) { return causal_softmax(v[0], a.at("scale")); }},
      {"causal_mask_softmax", [](const json&, const V& v) { return softmax(causal_mask(v[0]), -1); }},
  };
}

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
#define CHECK_ERROR(expr, text)                                            \
  do {                                                                     \
    std::string msg_ = error_of([&] { (void)(expr); });                    \
    CHECK_MESSAGE(msg_.find(text) != std::string::npos, "got: " << msg_);  \
  } while (0)

std::vector<uint16_t> bits_of(const Tensor& t) {
  Tensor c = t.contiguous();
  const uint16_t* p = static_cast<const uint16_t*>(c.raw_data());
  return std::vector<uint16_t>(p, p + c.numel());
}

// op(inputs in dt) == round_dt(op(inputs widened to F32)), bit for bit.
void check_f32_then_round(const std::string& name, const std::function<Tensor(const V&)>& op, const V& in) {
  V in32;
  for (const Tensor& t : in) in32.push_back(t.to(DType::F32));
  Tensor y = op(in);
  REQUIRE(y.dtype() == in[0].dtype());
  CHECK_MESSAGE(bits_of(y) == bits_of(op(in32).to(y.dtype())), name << " [" << dtype_name(y.dtype()) << "]");
}

// The same op on one thread and on two gives the same bits (forward and every gradient).
std::vector<std::vector<double>> run_with_threads(int threads, const std::function<Tensor(const V&)>& op, V in) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  for (Tensor& t : in) t = t.detach().clone().requires_grad_();
  Tensor y = op(in);
  y.backward(Tensor::ones(y.shape(), y.dtype()));
  std::vector<std::vector<double>> out{y.to_double_vector()};
  for (const Tensor& t : in) out.push_back(t.grad().to_double_vector());
  omp_set_num_threads(before);
  return out;
}

// ids 0..V-1 spread over a (B, T) batch, with repeats.
std::vector<int32_t> token_ids(int64_t n, int32_t V, uint64_t seed) {
  Generator g(seed);
  std::vector<int32_t> ids(n);
  for (auto& id : ids) id = static_cast<int32_t>(g.randint(V));
  return ids;
}

}  // namespace

// ---- 1. PyTorch -------------------------------------------------------------------------

TEST_CASE("GPT ops equal PyTorch: embedding, layer_norm, batched matmul, views, causal softmax") {
  hg::test::check_fixture_file("gpt_ops.json", gpt_ops(), DType::F64, 1e-12, 1e-10);
  hg::test::check_fixture_file("gpt_ops.json", gpt_ops(), DType::F32, 1e-5, 1e-5);
}

// ---- 2. finite differences ----------------------------------------------------------------

TEST_CASE("gradcheck: embedding, with repeated ids") {
  const std::vector<int32_t> ids = {4, 0, 4, 2, 4, 1};  // id 4 three times
  gradcheck("embedding", [&](const V& v) { return embedding(v[0], ids, {2, 3}); }, {test_input({5, 3}, 1)});
}

TEST_CASE("gradcheck: layer_norm with and without weight and bias") {
  Tensor x = test_input({2, 3, 6}, 2, -2, 2), w = test_input({6}, 3, 0.5, 1.5), b = test_input({6}, 4);
  gradcheck("layer_norm", [](const V& v) { return layer_norm(v[0], v[1], v[2]); }, {x, w, b});
  gradcheck("layer_norm no affine", [](const V& v) { return layer_norm(v[0], Tensor(), Tensor()); }, {x});
  gradcheck("layer_norm eps 0.1", [](const V& v) { return layer_norm(v[0], v[1], Tensor(), 0.1); }, {x, w});
}

TEST_CASE("gradcheck: batched matmul, every flag, broadcast batch dims") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      Tensor a = test_input(ta ? Shape{2, 3, 4, 5} : Shape{2, 3, 5, 4}, 5);
      Tensor b = test_input(tb ? Shape{3, 6, 4} : Shape{3, 4, 6}, 6);  // batch (3) broadcasts to (2, 3)
      gradcheck("matmul batched ta=" + std::to_string(ta) + " tb=" + std::to_string(tb),
                [ta, tb](const V& v) { return matmul(v[0], v[1], ta, tb); }, {a, b});
    }
  gradcheck("matmul (2,4,5)·(5,3), folded into one GEMM",
            [](const V& v) { return matmul(v[0], v[1]); }, {test_input({2, 4, 5}, 7), test_input({5, 3}, 8)});
  gradcheck("matmul (4,5)·(2,5,3)", [](const V& v) { return matmul(v[0], v[1]); },
            {test_input({4, 5}, 9), test_input({2, 5, 3}, 10)});
}

TEST_CASE("gradcheck: transpose, permute, narrow, split, expand, and ops on their views") {
  Tensor x = test_input({2, 3, 4}, 11);
  gradcheck("transpose", [](const V& v) { return transpose(v[0], 0, 2); }, {x});
  gradcheck("permute", [](const V& v) { return permute(v[0], {1, 2, 0}); }, {x});
  gradcheck("narrow", [](const V& v) { return narrow(v[0], 2, 1, 2); }, {x});
  gradcheck("split, all pieces used", [](const V& v) {
    V p = split(v[0], 2, 2);  // (2,3,2), (2,3,2)
    return add(mul(p[0], 2.0), p[1]);
  }, {x});
  gradcheck("expand (3,1) -> (2,3,4)", [](const V& v) { return expand(v[0], {2, 3, 4}); }, {test_input({3, 1}, 12)});
  gradcheck("reshape of a transposed view", [](const V& v) { return reshape(transpose(v[0], 1, 2), {2, 12}); }, {x});
  gradcheck("square of a narrowed view", [](const V& v) { return square(narrow(v[0], 1, 1, 2)); }, {x});
}

TEST_CASE("gradcheck: causal_softmax and causal_mask") {
  Tensor s = test_input({2, 2, 4, 4}, 13, -3, 3);
  gradcheck("causal_softmax", [](const V& v) { return causal_softmax(v[0]); }, {s});
  gradcheck("causal_softmax scale 0.35", [](const V& v) { return causal_softmax(v[0], 0.35); }, {s});
  gradcheck("softmax(causal_mask)", [](const V& v) { return softmax(causal_mask(v[0]), -1); }, {s});
}

// ---- what the ops promise beyond the numbers ----------------------------------------------

TEST_CASE("transpose, permute and narrow are views: no copy, the same storage") {
  Tensor x = Tensor::arange(24).reshape({2, 3, 4});
  Tensor t = transpose(x, 0, 2), n = narrow(x, 2, 1, 2);
  CHECK(t.impl().storage == x.impl().storage);
  CHECK(n.impl().storage == x.impl().storage);
  CHECK(t.shape() == Shape{4, 3, 2});
  CHECK(t.strides() == Shape{1, 4, 12});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.contiguous().to_vector()[1] == 12.0f);  // t[0, 0, 1] = x[1, 0, 0]
  CHECK(n.impl().offset == 1);
  CHECK(n.to_vector() == std::vector<float>{1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22});
}

TEST_CASE("expand records autograd: the gradient of a broadcast view sums over the copies") {
  // Before expand recorded a node, x.grad stayed undefined here and backward() refused
  // (the result did not require grad).
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3, 1}).requires_grad_();
  Tensor y = expand(x, {2, 3, 4});
  REQUIRE(y.requires_grad());
  sum(y).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{8, 8, 8});
}

TEST_CASE("causal_softmax = softmax(causal_mask(s·x)): zero above the diagonal, rows sum to 1") {
  Tensor s = test_input({3, 6, 6}, 14, -5, 5).to(DType::F32);
  Tensor fused = causal_softmax(s, 0.25), literal = softmax(causal_mask(mul(s, 0.25)), -1);
  hg::test::Compare c = hg::test::compare(fused.to_double_vector(), literal.to_double_vector(), 1e-7, 1e-6);
  CHECK_MESSAGE(c.ok, "max diff " << c.max_diff);
  std::vector<float> p = fused.to_vector();
  for (int64_t m = 0; m < 3; ++m)
    for (int64_t i = 0; i < 6; ++i) {
      double row = 0;
      for (int64_t j = 0; j < 6; ++j) {
        const float v = p[(m * 6 + i) * 6 + j];
        if (j > i) CHECK(v == 0.0f);
        row += v;
      }
      CHECK(row == doctest::Approx(1.0).epsilon(1e-6));
    }
  // the literal mask holds −inf above the diagonal
  CHECK(std::isinf(causal_mask(s).to_vector()[1]));
}

TEST_CASE("causal_softmax does not overflow on huge scores (the max is subtracted)") {
  Tensor s = Tensor::from_vector(std::vector<float>{1e4f, -1e4f, 3e4f, 3e4f}, {2, 2});
  std::vector<float> p = causal_softmax(s).to_vector();
  CHECK(p == std::vector<float>{1, 0, 0.5f, 0.5f});
}

TEST_CASE("batched matmul = one 2-D matmul per matrix, bit for bit, on any number of threads") {
  Tensor a = test_input({2, 3, 17, 9}, 15).to(DType::F32), b = test_input({3, 9, 11}, 16).to(DType::F32);
  Tensor c = matmul(a, b);
  REQUIRE(c.shape() == Shape{2, 3, 17, 11});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t h = 0; h < 3; ++h) {
      Tensor ai = reshape(narrow(narrow(a, 0, i, 1), 1, h, 1), {17, 9});
      Tensor bh = reshape(narrow(b, 0, h, 1), {9, 11});
      Tensor ci = reshape(narrow(narrow(c, 0, i, 1), 1, h, 1), {17, 11});
      CHECK(ci.to_vector() == matmul(ai, bh).to_vector());
    }
  // Large matrices (each GEMM uses the threads) and small ones (matrices side by side)
  for (int64_t n : {8, 160}) {
    V in = {test_input({4, n, n}, 17).to(DType::F32), test_input({4, n, n}, 18).to(DType::F32)};
    auto op = [](const V& v) { return matmul(v[0], v[1], false, true); };
    CHECK_MESSAGE(run_with_threads(1, op, in) == run_with_threads(2, op, in), "n = " << n);
  }
}

TEST_CASE("embedding and layer_norm backward give the same bits on 1 and 2 threads") {
  const std::vector<int32_t> ids = token_ids(64 * 64, 50, 19);  // 4096 positions, many repeats
  auto emb = [&](const V& v) { return embedding(v[0], ids, {64, 64}); };
  V w = {test_input({50, 96}, 20).to(DType::F32)};
  CHECK(run_with_threads(1, emb, w) == run_with_threads(2, emb, w));
  auto ln = [](const V& v) { return layer_norm(v[0], v[1], v[2]); };
  V in = {test_input({4096, 32}, 21).to(DType::F32), test_input({32}, 22).to(DType::F32), test_input({32}, 23).to(DType::F32)};
  CHECK(run_with_threads(1, ln, in) == run_with_threads(2, ln, in));
}

TEST_CASE("layer_norm of rows with |mean| >> std keeps its digits in F32") {
  // x = 1000 + small deviations; E[x²] − E[x]² would leave nothing of σ² = 1.25e-5 in F32
  Tensor x = Tensor::from_vector(std::vector<float>{1000.0f, 1000.005f, 999.995f, 1000.0f}, {1, 4});
  Tensor ref = layer_norm(x.to(DType::F64), Tensor(), Tensor(), 0.0);
  hg::test::Compare c = hg::test::compare(layer_norm(x, Tensor(), Tensor(), 0.0).to_double_vector(),
                                          ref.to_double_vector(), 1e-5, 1e-5);
  CHECK_MESSAGE(c.ok, "max diff " << c.max_diff);
}

// ---- 3. F16 / BF16 ------------------------------------------------------------------------

TEST_CASE("F16/BF16: layer_norm and causal_softmax are F32 math then one rounding") {
  for (DType dt : {DType::F16, DType::BF16}) {
    Generator g(24);
    Tensor x = Tensor::uniform({3, 5, 40}, -3, 3, g, dt), w = Tensor::uniform({40}, 0.5, 1.5, g, dt),
           b = Tensor::uniform({40}, -1, 1, g, dt), s = Tensor::uniform({2, 7, 7}, -6, 6, g, dt);
    check_f32_then_round("layer_norm", [](const V& v) { return layer_norm(v[0], v[1], v[2]); }, {x, w, b});
    check_f32_then_round("causal_softmax", [](const V& v) { return causal_softmax(v[0], 0.3); }, {s});
    // F16 activation with F32 weight and bias (how a norm stays F32 in a half model)
    Tensor y = layer_norm(x, w.to(DType::F32), b.to(DType::F32));
    CHECK(y.dtype() == dt);
    CHECK(bits_of(y) == bits_of(layer_norm(x.to(DType::F32), w.to(DType::F32), b.to(DType::F32)).to(dt)));
  }
}

TEST_CASE("F16/BF16: embedding copies rows bit-exactly and sums its gradient in F32") {
  for (DType dt : {DType::F16, DType::BF16}) {
    Generator g(25);
    Tensor w = Tensor::uniform({6, 4}, -1, 1, g, dt).requires_grad_();
    std::vector<int32_t> ids(4096, 2);  // one token 4096 times, gradient 1 each
    ids[7] = 5;
    Tensor y = embedding(w, ids, {4096});
    CHECK(bits_of(narrow(y, 0, 0, 1)) == bits_of(narrow(w.detach(), 0, 2, 1)));
    y.backward(Tensor::ones(y.shape(), dt));
    // 4095 ones summed in F16 would stall at 2048 (2048 + 1 rounds back to 2048); in F32 the
    // sum is 4095, which rounds once to 4096 in F16 and in BF16
    std::vector<float> grad = w.grad().to_vector();
    CHECK(w.grad().dtype() == dt);
    CHECK(grad[2 * 4] == 4096.0f);
    CHECK(grad[5 * 4] == 1.0f);
    CHECK(grad[0] == 0.0f);
  }
}

TEST_CASE("F16/BF16 batched matmul: small integers are exact (F32 accumulation)") {
  for (DType dt : {DType::F16, DType::BF16}) {
    Generator g(26);
    std::vector<float> av(2 * 3 * 64), bv(3 * 64 * 5);
    for (float& v : av) v = float(int(g.randint(7)) - 3);
    for (float& v : bv) v = float(int(g.randint(7)) - 3);
    Tensor a = Tensor::from_vector(av, {2, 3, 64}), b = Tensor::from_vector(bv, {3, 64, 5});
    Tensor a4 = reshape(a, {2, 1, 3, 64}), b4 = reshape(b, {3, 64, 5});  // (2,1,3,64)·(3,64,5)
    Tensor c = matmul(a4.to(dt), b4.to(dt));
    CHECK(c.dtype() == dt);
    CHECK(c.to_vector() == matmul(a4.to(DType::F64), b4.to(DType::F64)).to_vector());
  }
}

// ---- 4. autocast ---------------------------------------------------------------------------

TEST_CASE("autocast: layer_norm and causal_softmax run in F32, batched matmul in F16/BF16, embedding as it is") {
  Generator g(27);
  Tensor x16 = Tensor::uniform({2, 3, 8}, -1, 1, g, DType::F16);
  Tensor w = Tensor::ones({8}).requires_grad_(), b = Tensor::zeros({8}).requires_grad_();
  Tensor table = Tensor::uniform({5, 8}, -1, 1, g).requires_grad_();
  Tensor q = Tensor::uniform({2, 4, 6, 8}, -1, 1, g);
  for (DType low : {DType::F16, DType::BF16}) {
    hg::amp::Autocast ac(low);
    CHECK(layer_norm(x16, w, b).dtype() == DType::F32);  // as torch.autocast: on its fp32 list
    CHECK(causal_softmax(narrow(x16.reshape({2, 3, 2, 4}), 3, 0, 2)).dtype() == DType::F32);
    Tensor scores = matmul(q, q, false, true);
    CHECK(scores.dtype() == low);
    CHECK(causal_softmax(scores).dtype() == DType::F32);
    CHECK(embedding(table, std::vector<int32_t>{1, 4}, {2}).dtype() == DType::F32);
    CHECK(causal_mask(scores).dtype() == low);
  }
  // An F32 parameter used through a region gets an F32 gradient.
  {
    hg::amp::Autocast ac(DType::F16);
    Tensor h = layer_norm(embedding(table, std::vector<int32_t>{1, 4, 1}, {3}), w, b);
    Tensor loss = sum(matmul(h, table, false, true));
    loss.backward();
  }
  CHECK(w.grad().dtype() == DType::F32);
  CHECK(table.grad().dtype() == DType::F32);
  CHECK(hg::amp::policy_for("causal_softmax") == hg::amp::CastPolicy::FP32);
  CHECK(hg::amp::policy_for("layer_norm") == hg::amp::CastPolicy::FP32);
  CHECK(hg::amp::policy_for("embedding") == hg::amp::CastPolicy::None);
}

// ---- 5. bad input ---------------------------------------------------------------------------

TEST_CASE("bad input to the GPT ops is named") {
  Tensor w = Tensor::zeros({5, 3});
  CHECK_ERROR(embedding(w, std::vector<int32_t>{0, 5}, {2}),
              "embedding: id 5 at position 1 is not a row of the table: the weight (5, 3) has 5 rows");
  CHECK_ERROR(embedding(w, std::vector<int32_t>{0, -1}, {2}), "embedding: id -1 at position 1");
  CHECK_ERROR(embedding(w, std::vector<int32_t>{0, 1, 2}, {2, 2}), "embedding: 3 ids do not fill the shape (2, 2)");
  CHECK_ERROR(embedding(Tensor::zeros({5}), std::vector<int32_t>{0}, {1}), "embedding: weight must have 2 dimensions (V, C)");
  CHECK_ERROR(embedding(w, Tensor::from_vector(std::vector<float>{1.5f}, {1})), "embedding: id 1.5 at position 0 is not an integer");
  Tensor x = Tensor::zeros({2, 4});
  CHECK_ERROR(layer_norm(x, Tensor::ones({3}), Tensor()), "layer_norm: weight must have shape (4)");
  CHECK_ERROR(layer_norm(x, Tensor(), Tensor::ones({4, 1})), "layer_norm: bias must have shape (4)");
  CHECK_ERROR(layer_norm(Tensor::scalar(1.0), Tensor(), Tensor()), "layer_norm: x needs at least one dimension");
  CHECK_ERROR(matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({5, 4, 2})), "matmul: shapes (2) and (5) cannot broadcast");
  CHECK_ERROR(matmul(Tensor::zeros({2, 3, 4}), Tensor::zeros({2, 5, 2})), "matmul: inner sizes differ: op(a) is (3, 4) and op(b) is (5, 2)");
  CHECK_ERROR(matmul(Tensor::zeros({4}), Tensor::zeros({2, 4, 2})), "matmul: a must have 2 dimensions (M, K), got shape (4); a batch of matrices is (..., M, K)");
  CHECK_ERROR(causal_softmax(Tensor::zeros({2, 3, 4})), "causal_softmax: scores must be (..., T, T), queries × keys, got shape (2, 3, 4)");
  CHECK_ERROR(causal_mask(Tensor::zeros({4})), "causal_mask: scores must be (..., T, T)");
  Tensor t = Tensor::zeros({2, 6});
  CHECK_ERROR(narrow(t, 1, 4, 3), "narrow: [4, 7) is out of range for dim 1 of size 6 (shape (2, 6))");
  CHECK_ERROR(narrow(t, 2, 0, 1), "narrow: dim 2 is out of range for a tensor with 2 dimensions");
  CHECK_ERROR(split(t, 0, 1), "split: size must be positive, got 0");
  CHECK_ERROR(permute(t, {1, 1}), "permute: dim 1 appears twice in (1, 1)");
  CHECK_ERROR(permute(t, {0}), "permute: needs one entry per dim: x has shape (2, 6), got 1 entries");
  CHECK_ERROR(transpose(t, 0, 2), "transpose: dim 2 is out of range");
  CHECK_ERROR(expand(t, {3, 6}), "expand: cannot expand (2, 6) to (3, 6)");
}
