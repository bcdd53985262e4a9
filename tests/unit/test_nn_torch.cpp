// One full training step of MLP, SmallCNN and a narrow ResNet equals PyTorch's: the same weights and batch
// give the same logits, loss, gradients, and weights after SGD (lr 0.05, momentum 0.9,
// weight decay 5e-4), for two steps (the second uses the momentum buffer).
// Reference: tests/reference/nn/make_fixtures.py, torch 1.13 on the CPU, small model sizes.
#include <doctest/doctest.h>

#include <cmath>

#include "framework/nn/models/mlp.h"
#include "framework/nn/models/resnet.h"
#include "framework/nn/models/small_cnn.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"
#include "tests/reference/nn/fixture.h"

using namespace hg;

namespace {

// Tolerances: PyTorch and halfgrad sum in different orders (blocked GEMMs, vectorised
// reductions), so values agree to a few F32 ULPs of the largest term, not bit for bit.
constexpr double kAtol = 2e-6, kRtol = 1e-4;

// scale_atol: see check_close. The ResNet needs it: its BatchNorms normalise over very few
// values (layer4 sees 4 images x 1x1 pixels per channel), which amplifies rounding, and
// PyTorch's own F32 gradients there differ from its F64 ones by 1.2e-5 at max |g| ~ 1.5.
void run_fixture(nn::Module& model, const std::string& file, double scale_atol = 0) {
  const auto fx = testing::read_nn_fixture(file);
  // PyTorch's initial weights into our model, by name.
  std::vector<nn::NamedTensor> init;
  for (const auto& [name, t] : fx.at("params").items()) init.push_back({name, testing::fixture_tensor(t)});
  for (const auto& [name, t] : fx.at("buffers").items()) init.push_back({name, testing::fixture_tensor(t)});
  model.load_state(init);
  std::vector<std::string> order;
  for (const auto& p : model.named_parameters()) order.push_back(p.name);
  CHECK(order == fx.at("param_order").get<std::vector<std::string>>());

  const Tensor x = testing::fixture_tensor(fx.at("input"));
  const std::vector<int32_t> labels = fx.at("labels").get<std::vector<int32_t>>();
  optim::SGDOptions o;
  o.lr = fx.at("lr");
  o.momentum = fx.at("momentum");
  o.weight_decay = fx.at("weight_decay");
  optim::SGD opt(model.parameters(), o);

  int step = 0;
  for (const auto& ref : fx.at("steps")) {
    ++step;
    CAPTURE(step);
    opt.zero_grad();
    Tensor logits = model.forward(x);
    Tensor loss = cross_entropy(logits, labels);
    loss.backward();
    testing::check_close("logits", logits, testing::fixture_tensor(ref.at("logits")), kAtol, kRtol, scale_atol);
    const double ref_loss = ref.at("loss");
    INFO("loss " << loss.item() << " PyTorch " << ref_loss);
    CHECK(std::fabs(loss.item() - ref_loss) <= 1e-6 + 1e-5 * std::fabs(ref_loss));
    for (const auto& p : model.named_parameters())
      testing::check_close("grad of " + p.name, p.tensor.grad(),
                           testing::fixture_tensor(ref.at("grads").at(p.name)), kAtol, kRtol, scale_atol);
    opt.step();
    for (const auto& p : model.named_parameters())
      testing::check_close(p.name + " after the step", p.tensor,
                           testing::fixture_tensor(ref.at("params_after").at(p.name)), kAtol, kRtol, scale_atol);
    // BatchNorm's running statistics, updated by the forward pass in training mode.
    for (const auto& b : model.named_buffers())
      testing::check_close(b.name + " after the step", b.tensor,
                           testing::fixture_tensor(ref.at("buffers_after").at(b.name)), kAtol, kRtol, scale_atol);
  }
  CHECK(step == 2);
}

}  // namespace

TEST_CASE("MLP: forward, loss, backward and two SGD steps equal PyTorch's") {
  Generator gen(0);
  nn::MLP mlp(gen, 64, 32, 16, 10);
  run_fixture(mlp, "mlp_sgd.json");
}

TEST_CASE("SmallCNN: forward, loss, backward and two SGD steps equal PyTorch's") {
  Generator gen(0);
  nn::SmallCNN cnn(gen, 1, 4, 8, 16, 10, 8);
  run_fixture(cnn, "smallcnn_sgd.json");
}

TEST_CASE("ResNet (BasicBlocks, BatchNorm in training mode): two SGD steps and running stats equal PyTorch's") {
  Generator gen(0);
  nn::ResNet net(nn::ResNet::Block::Basic, {1, 1, 1, 1}, gen, 1, 10, 2);
  run_fixture(net, "resnet_sgd.json", 1e-4);
}
