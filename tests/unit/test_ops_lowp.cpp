// F16 and BF16 through the engine: every op accepts them and computes what "F32 math, then
// one rounding to the storage dtype" gives; matmul and conv use F32 accumulation, so
// small-integer products are exact; reductions accumulate in F32.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "framework/cpu/copy.h"
#include "framework/halfgrad.h"

using namespace hg;
using V = std::vector<Tensor>;

static const DType kLowp[] = {DType::F16, DType::BF16};

// Values already representable in dt (so the F32 reference sees the same inputs).
static Tensor lowp_input(Shape s, DType dt, uint64_t seed, double lo = -3, double hi = 3) {
  Generator g(seed);
  return Tensor::uniform(s, lo, hi, g, dt);
}

// Bit patterns of a 16-bit tensor.
static std::vector<uint16_t> bits_of(const Tensor& t) {
  Tensor c = t.contiguous();
  const uint16_t* p = static_cast<const uint16_t*>(c.raw_data());
  return std::vector<uint16_t>(p, p + c.numel());
}

// Check: op(inputs in dt) == round_dt(op(inputs widened to F32)), bit for bit.
static void check_f32_then_round(const std::string& name, const std::function<Tensor(const V&)>& op,
                                 const V& in_lowp) {
  V in32;
  for (const Tensor& t : in_lowp) in32.push_back(t.to(DType::F32));
  Tensor y = op(in_lowp);
  Tensor ref = op(in32).to(y.dtype());  // one rounding of the F32 result
  REQUIRE(y.dtype() == in_lowp[0].dtype());
  std::vector<uint16_t> a = bits_of(y), b = bits_of(ref);
  int mismatches = 0;
  double max_diff = 0;
  std::vector<float> av = y.to_vector(), bv = ref.to_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    mismatches += a[i] != b[i];
    if (!(std::isnan(av[i]) && std::isnan(bv[i]))) max_diff = std::max(max_diff, (double)std::fabs(av[i] - bv[i]));
  }
  CHECK_MESSAGE(mismatches == 0, name << " [" << std::string(dtype_name(y.dtype())) << "]: " << mismatches
                                      << " of " << a.size() << " elements differ, max diff " << max_diff);
}

TEST_CASE("F16/BF16 elementwise, unary, softmax and pooling = F32 math, then one rounding") {
  for (DType dt : kLowp) {
    Tensor a = lowp_input({4, 33}, dt, 1), b = lowp_input({4, 33}, dt, 2), row = lowp_input({33}, dt, 3);
    Tensor pos = lowp_input({4, 33}, dt, 4, 0.1, 4);
    check_f32_then_round("add", [](const V& v) { return add(v[0], v[1]); }, {a, b});
    check_f32_then_round("add broadcast", [](const V& v) { return add(v[0], v[1]); }, {a, row});
    check_f32_then_round("sub", [](const V& v) { return sub(v[0], v[1]); }, {a, b});
    check_f32_then_round("mul", [](const V& v) { return mul(v[0], v[1]); }, {a, b});
    check_f32_then_round("div", [](const V& v) { return div(v[0], v[1]); }, {a, pos});
    check_f32_then_round("mul scalar", [](const V& v) { return mul(v[0], 0.1); }, {a});
    check_f32_then_round("relu", [](const V& v) { return relu(v[0]); }, {a});
    check_f32_then_round("gelu", [](const V& v) { return gelu(v[0]); }, {a});
    check_f32_then_round("sigmoid", [](const V& v) { return sigmoid(v[0]); }, {a});
    check_f32_then_round("tanh", [](const V& v) { return hg::tanh(v[0]); }, {a});
    check_f32_then_round("exp", [](const V& v) { return hg::exp(v[0]); }, {a});
    check_f32_then_round("log", [](const V& v) { return hg::log(v[0]); }, {pos});
    check_f32_then_round("softmax", [](const V& v) { return softmax(v[0], 1); }, {a});
    check_f32_then_round("log_softmax", [](const V& v) { return log_softmax(v[0], 1); }, {a});
    check_f32_then_round("sum dim", [](const V& v) { return sum(v[0], 1); }, {a});
    check_f32_then_round("mean dim", [](const V& v) { return mean(v[0], 0); }, {a});
    Tensor img = lowp_input({2, 3, 6, 6}, dt, 5);
    check_f32_then_round("max_pool2d", [](const V& v) { return max_pool2d(v[0], 2); }, {img});
    check_f32_then_round("avg_pool2d", [](const V& v) { return avg_pool2d(v[0], 3, 1, 1); }, {img});
    check_f32_then_round("global_avg_pool2d", [](const V& v) { return global_avg_pool2d(v[0]); }, {img});
    // batch norm: F16/BF16 activations with F32 parameters and statistics
    Tensor g = Tensor::from_vector(std::vector<float>{0.5f, 1.0f, 2.0f}, {3});
    Tensor be = Tensor::from_vector(std::vector<float>{0.1f, -0.2f, 0.3f}, {3});
    check_f32_then_round("batch_norm2d eval", [&](const V& v) {
      Tensor rm = Tensor::from_vector(std::vector<float>{0.1f, 0.2f, -0.1f}, {3});
      Tensor rv = Tensor::from_vector(std::vector<float>{1.0f, 0.5f, 2.0f}, {3});
      return batch_norm2d(v[0], g, be, rm, rv, false);
    }, {img});
  }
}

TEST_CASE("F16/BF16 reductions accumulate in F32") {
  // 4096 ones summed in F16 would stop at 2048 (2048 + 1 rounds back to 2048: the ULP there
  // is 2). Accumulating in F32 gives 4096, which F16 stores exactly.
  Tensor ones = Tensor::ones({4096}, DType::F16);
  CHECK(sum(ones).item() == 4096.0);
  CHECK(mean(ones).item() == 1.0);
  CHECK(sum(ones.reshape({1, 4096}), 1).item() == 4096.0);
  // BF16 has 8 significand bits: 256 + 1 = 256 in BF16, but the F32 sum of 512 ones is 512
  CHECK(sum(Tensor::ones({512}, DType::BF16)).item() == 512.0);
}

// x·y for small integers in F64: the exact reference.
static Tensor exact(const Tensor& t) { return t.to(DType::F64); }

TEST_CASE("F16/BF16 matmul and linear: small integers are exact (F32 accumulation)") {
  for (DType dt : kLowp) {
    // |products| ≤ 4 and K = 32: every partial sum is an integer ≤ 128, exact in F16 and BF16
    auto ints = [dt](Shape s, uint64_t seed) {
      Generator g(seed);
      std::vector<double> v(shape_numel(s));
      for (double& x : v) x = static_cast<double>(static_cast<int>(g.randint(5)) - 2);
      return Tensor::from_vector(v, s, dt);
    };
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = ints(ta ? Shape{32, 7} : Shape{7, 32}, 10), b = ints(tb ? Shape{9, 32} : Shape{32, 9}, 11);
        Tensor y = matmul(a, b, ta, tb);
        CHECK(y.dtype() == dt);
        CHECK(y.to_double_vector() == matmul(exact(a), exact(b), ta, tb).to_double_vector());
      }
    Tensor x = ints({5, 32}, 12), w = ints({6, 32}, 13), bias = ints({6}, 14);
    CHECK(linear(x, w, bias).to_double_vector() ==
          linear(exact(x), exact(w), exact(bias)).to_double_vector());
    Tensor img = ints({2, 3, 5, 5}, 15), k = ints({4, 3, 3, 3}, 16), kb = ints({4}, 17);
    Tensor yc = conv2d(img, k, kb, 1, 1);
    CHECK(yc.dtype() == dt);
    CHECK(yc.to_double_vector() == conv2d(exact(img), exact(k), exact(kb), 1, 1).to_double_vector());
  }
}

TEST_CASE("F16 matmul accumulates in F32, rounding once at the end") {
  // a·b = 2048 + 8·1 = 2056. Summed in F16, 2048 + 1 = 2048 every time (ULP 2) and the result
  // would be 2048; an F32 accumulator keeps every 1 and 2056 is an F16 number.
  std::vector<float> a(9, 1.0f);
  a[0] = 2048.0f;
  Tensor A = Tensor::from_vector(a, {1, 9}, DType::F16);
  Tensor B = Tensor::ones({9, 1}, DType::F16);
  CHECK(matmul(A, B).item() == 2056.0);
}

TEST_CASE("F16/BF16 losses: computed in F32, rounded once") {
  for (DType dt : kLowp) {
    Tensor logits = lowp_input({6, 10}, dt, 20, -8, 8);
    std::vector<int32_t> t = {0, 3, 9, 2, 2, 7};
    double l16 = cross_entropy(logits, t).item();
    double l32 = cross_entropy(logits.to(DType::F32), t).item();
    CHECK(cross_entropy(logits, t).dtype() == dt);
    // the F32 loss rounded to dt: within half an ULP of dt at that magnitude
    double ulp = std::ldexp(1.0, std::ilogb(l32) - (dt == DType::F16 ? 10 : 7));
    CHECK_MESSAGE(std::fabs(l16 - l32) <= ulp / 2, "F16 loss " << l16 << " vs F32 " << l32);
    Tensor p = lowp_input({4, 5}, dt, 21), q = lowp_input({4, 5}, dt, 22);
    double m16 = mse_loss(p, q).item(), m32 = mse_loss(p.to(DType::F32), q.to(DType::F32)).item();
    double mulp = std::ldexp(1.0, std::ilogb(m32) - (dt == DType::F16 ? 10 : 7));
    CHECK(std::fabs(m16 - m32) <= mulp / 2);
  }
}

TEST_CASE("gradients: an F16 parameter gets an F16 gradient, an F32 one cast to F16 gets F32") {
  Generator gen(3);
  Tensor x = Tensor::randn({4, 8}, gen, DType::F16);
  Tensor w16 = Tensor::randn({3, 8}, gen, DType::F16).requires_grad_();
  Tensor w32 = Tensor::randn({3, 8}, gen, DType::F32).requires_grad_();
  std::vector<int32_t> t = {0, 1, 2, 1};
  cross_entropy(linear(x, w16), t).backward();
  CHECK(w16.grad().dtype() == DType::F16);
  cross_entropy(linear(x, w32.to(DType::F16)), t).to(DType::F32).backward();
  CHECK(w32.grad().dtype() == DType::F32);
  // and they agree with an all-F32 computation to F16 precision
  Tensor w = w32.detach().clone().requires_grad_();
  cross_entropy(linear(x.to(DType::F32), w), t).backward();
  std::vector<float> g16 = w32.grad().to_vector(), g32 = w.grad().to_vector();
  double max_diff = 0;
  for (size_t i = 0; i < g16.size(); ++i) max_diff = std::max(max_diff, (double)std::fabs(g16[i] - g32[i]));
  CHECK_MESSAGE(max_diff < 2e-3, "max diff " << max_diff);
  // conv and batch norm: F16 activations, F32 batch-norm parameters keep F32 gradients
  Tensor img = Tensor::randn({2, 3, 4, 4}, gen, DType::F16);
  Tensor k = Tensor::randn({2, 3, 3, 3}, gen, DType::F32).requires_grad_();
  Tensor gamma = Tensor::ones({2}).requires_grad_(), beta = Tensor::zeros({2}).requires_grad_();
  Tensor rm = Tensor::zeros({2}), rv = Tensor::ones({2});
  Tensor y = batch_norm2d(conv2d(img, k.to(DType::F16), Tensor(), 1, 1), gamma, beta, rm, rv, true);
  CHECK(y.dtype() == DType::F16);
  sum(y.to(DType::F32) * y.to(DType::F32)).backward();
  CHECK(k.grad().dtype() == DType::F32);
  CHECK(gamma.grad().dtype() == DType::F32);
  CHECK(beta.grad().dtype() == DType::F32);
}

TEST_CASE("block conversions F32 <-> F16/BF16 give framework/dtype's bits") {
  // every 16-bit pattern widened, and 2^22 spread-out F32 patterns (plus specials) narrowed
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  std::vector<uint32_t> wide(65536);
  cpu::convert(all.data(), DType::BF16, wide.data(), DType::F32, 65536);
  int bad = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    float ref = bf16_bits_to_float(static_cast<uint16_t>(i));
    uint32_t rb;
    std::memcpy(&rb, &ref, 4);
    bad += rb != wide[i];
  }
  cpu::convert(all.data(), DType::F16, wide.data(), DType::F32, 65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    float ref = half_bits_to_float(static_cast<uint16_t>(i));
    uint32_t rb;
    std::memcpy(&rb, &ref, 4);
    bad += rb != wide[i];
  }
  CHECK_MESSAGE(bad == 0, bad << " widened patterns differ");
  std::vector<uint32_t> f32;
  for (uint64_t u = 0; u < (1ull << 32); u += 1021) f32.push_back(static_cast<uint32_t>(u));
  for (uint32_t sp : {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0x7F800001u,
                      0xFFFFFFFFu, 0x7F7FFFFFu, 0x00000001u, 0x3F808000u, 0x3F818000u, 0x477FF000u})
    f32.push_back(sp);
  std::vector<uint16_t> narrow(f32.size());
  int bad_bf = 0, bad_h = 0;
  cpu::convert(f32.data(), DType::F32, narrow.data(), DType::BF16, f32.size());
  for (size_t i = 0; i < f32.size(); ++i) {
    float v;
    std::memcpy(&v, &f32[i], 4);
    bad_bf += narrow[i] != float_to_bf16_bits(v);
  }
  cpu::convert(f32.data(), DType::F32, narrow.data(), DType::F16, f32.size());
  for (size_t i = 0; i < f32.size(); ++i) {
    float v;
    std::memcpy(&v, &f32[i], 4);
    bad_h += narrow[i] != float_to_half_bits(v);
  }
  CHECK_MESSAGE(bad_bf == 0, bad_bf << " of " << f32.size() << " F32->BF16 patterns differ");
  CHECK_MESSAGE(bad_h == 0, bad_h << " of " << f32.size() << " F32->F16 patterns differ");
}
