// Activation recomputation (framework/autograd/recompute.h): the same gradients, bit for
// bit, for fewer saved bytes.
//
// The model: a stack of residual MLP blocks, y = x + W2·relu(W1·x + b1) + b2, with a loss
// that uses every output element. Each check runs it twice from the same weights, once
// plainly and once with every block under hg::recompute, and compares the bits of every
// gradient (parameters and input).
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "framework/amp/autocast.h"
#include "framework/autograd/recompute.h"
#include "framework/autograd/grad_mode.h"
#include "framework/autograd/node.h"
#include "framework/memory/accountant.h"
#include "framework/nn/linear.h"
#include "framework/ops/ops.h"

using hg::DType;
using hg::Tensor;
using hg::memory::Tag;

namespace {

struct Block {
  std::shared_ptr<hg::nn::Linear> fc1, fc2;
  Block(int64_t width, hg::Generator& gen)
      : fc1(std::make_shared<hg::nn::Linear>(width, 4 * width, gen)),
        fc2(std::make_shared<hg::nn::Linear>(4 * width, width, gen)) {}
  Tensor operator()(const Tensor& x) const { return hg::add(x, (*fc2)(hg::relu((*fc1)(x)))); }
};

struct Net {
  std::vector<Block> blocks;
  Net(int depth, int64_t width) {
    hg::Generator gen(42);  // same seed: same weights in every Net
    for (int i = 0; i < depth; ++i) blocks.emplace_back(width, gen);
  }
  Tensor forward(Tensor x, bool use_recompute) const {
    for (const Block& b : blocks) {
      if (use_recompute)
        x = hg::recompute([&b](const std::vector<Tensor>& in) { return b(in[0]); }, {x});
      else
        x = b(x);
    }
    return x;
  }
  std::vector<Tensor> params() const {
    std::vector<Tensor> p;
    for (const Block& b : blocks)
      for (const auto& m : {b.fc1, b.fc2})
        for (const Tensor& t : m->parameters()) p.push_back(t);
    return p;
  }
};

Tensor loss_of(const Tensor& y) { return hg::sum(hg::mul(y, y)); }

bool same_bits(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined() || a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

// Gradients of every parameter, then of the input (when it requires one).
std::vector<Tensor> gradients(bool use_recompute, bool input_requires_grad, bool autocast = false) {
  Net net(3, 8);
  hg::Generator gen(7);
  Tensor x = Tensor::randn({6, 8}, gen);
  if (input_requires_grad) x.requires_grad_(true);
  Tensor loss;
  {
    std::unique_ptr<hg::amp::Autocast> region;
    if (autocast) region = std::make_unique<hg::amp::Autocast>(DType::BF16);
    loss = loss_of(net.forward(x, use_recompute));
  }
  loss.backward();
  std::vector<Tensor> g;
  for (const Tensor& p : net.params()) g.push_back(p.grad());
  if (input_requires_grad) g.push_back(x.grad());
  return g;
}

void check_bit_identical(bool input_requires_grad, bool autocast) {
  const auto plain = gradients(false, input_requires_grad, autocast);
  const auto ckpt = gradients(true, input_requires_grad, autocast);
  REQUIRE(plain.size() == ckpt.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    INFO("gradient " << i);
    CHECK(same_bits(plain[i], ckpt[i]));
  }
}

}  // namespace

TEST_CASE("recompute: parameter and input gradients are bit-identical with and without it") {
  check_bit_identical(/*input_requires_grad=*/true, /*autocast=*/false);
}

TEST_CASE("recompute: an input that needs no gradient (the data) still trains the parameters inside") {
  check_bit_identical(false, false);
}

TEST_CASE("recompute: under autocast the recomputation casts as the forward did (BF16, same bits)") {
  check_bit_identical(true, true);
}

TEST_CASE("recompute: the forward keeps only the blocks' inputs, and the peak of saved bytes drops") {
  auto saved = [](bool use_recompute, int64_t* peak) {
    Net net(4, 16);
    hg::Generator gen(3);
    Tensor x = Tensor::randn({32, 16}, gen);
    const int64_t before = hg::memory::usage(hg::Device::CPU).current[int(Tag::Activation)];
    hg::memory::reset_peak();
    Tensor loss = loss_of(net.forward(x, use_recompute));
    const int64_t after_forward = hg::memory::usage(hg::Device::CPU).current[int(Tag::Activation)] - before;
    loss.backward();
    *peak = hg::memory::usage(hg::Device::CPU).tag_peak[int(Tag::Activation)] - before;
    return after_forward;
  };
  int64_t peak_plain = 0, peak_ckpt = 0;
  const int64_t plain = saved(false, &peak_plain);
  const int64_t ckpt = saved(true, &peak_ckpt);
  // By hand, F32, batch 32, width 16, 4 blocks. Plainly each block keeps x (32·16), fc1's
  // output (32·64) for relu, relu's output (32·64) for fc2, and the add keeps x and fc2's
  // output (32·16, x counted once): 32·(16 + 64 + 64 + 16) · 4 bytes = 20480 per block,
  // and the loss keeps y (for y·y, one storage: 32·16·4 = 2048) and y·y (for the sum, 2048).
  CHECK(plain == 4 * 20480 + 4096);
  // With recomputation only each block's input (32·16·4 = 2048) and the loss's two.
  CHECK(ckpt == 4 * 2048 + 4096);
  // During backward one block's interior comes back at a time: the peak stays well below.
  MESSAGE("saved activations: plain " << plain << " B, recomputed " << ckpt << " B; peak during "
          "forward+backward: plain " << peak_plain << " B, recomputed " << peak_ckpt << " B");
  CHECK(peak_ckpt < peak_plain / 2);
}

TEST_CASE("recompute: dropout inside draws the same masks again when its generator is given") {
  // y = dropout(relu(x·W), 0.5): the mask is drawn from gen in the forward. Given gen, the
  // recomputation rewinds it and draws the same mask: the gradient is the plain one, bit for
  // bit, and gen ends where the plain run left it. Without it, a second mask is drawn.
  auto run = [](int mode, uint64_t* gen_after) {  // 0 plain, 1 recompute with rng, 2 without
    hg::Generator init(5), gen(11);
    Tensor w = Tensor::randn({8, 8}, init).requires_grad_(true);
    Tensor x = Tensor::randn({16, 8}, init);
    auto fn = [&](const std::vector<Tensor>& in) {
      return hg::dropout(hg::relu(hg::matmul(in[0], w)), 0.5, true, gen);
    };
    Tensor y = mode == 0 ? fn({x}) : hg::recompute(fn, {x}, mode == 1 ? &gen : nullptr);
    Tensor after_forward = Tensor::randn({1}, gen);  // the program goes on drawing
    hg::sum(hg::mul(y, y)).backward();
    *gen_after = gen.state();
    return w.grad();
  };
  uint64_t s_plain = 0, s_ckpt = 0, s_no_rng = 0;
  const Tensor plain = run(0, &s_plain), ckpt = run(1, &s_ckpt), no_rng = run(2, &s_no_rng);
  CHECK(same_bits(plain, ckpt));
  CHECK(s_ckpt == s_plain);
  CHECK_FALSE(same_bits(plain, no_rng));  // why the generator must be given
}

TEST_CASE("recompute: under NoGradGuard it is just fn, and a function returning its input is safe") {
  Tensor x = Tensor::ones({2}).requires_grad_(true);
  {
    hg::NoGradGuard no_grad;
    Tensor y = hg::recompute([](const std::vector<Tensor>& in) { return hg::mul(in[0], 2.0); }, {x});
    CHECK_FALSE(y.requires_grad());
  }
  Tensor z = hg::mul(x, 3.0);
  const auto history = z.grad_fn();
  Tensor same = hg::recompute([](const std::vector<Tensor>& in) { return in[0]; }, {z});
  CHECK(z.grad_fn() == history);  // z keeps its own history
  CHECK(same.grad_fn()->op == "recompute");
  hg::sum(same).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{3.0f, 3.0f});
}
