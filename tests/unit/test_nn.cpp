// nn: parameter names and shapes equal PyTorch's for every model (so checkpoints, run logs
// and fixtures name the same tensors), train/eval, dtype conversion, state loading.
#include <doctest/doctest.h>

#include "framework/autograd/grad_mode.h"
#include "framework/nn/layers.h"
#include "framework/nn/models/models.h"
#include "framework/nn/sequential.h"
#include "framework/ops/ops.h"
#include "tests/reference/nn/fixture.h"

using namespace hg;

namespace {

// Compares a list of (name, shape) against the fixture's, naming the first difference.
void check_names(const std::string& model, const std::vector<nn::NamedTensor>& got,
                 const nlohmann::json& ref) {
  INFO(model);
  REQUIRE(got.size() == ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string ref_name = ref[i][0].get<std::string>();
    const Shape ref_shape = ref[i][1].get<Shape>();
    INFO("#" << i << ": halfgrad " << got[i].name << " " << shape_str(got[i].tensor.shape())
             << ", PyTorch " << ref_name << " " << shape_str(ref_shape));
    CHECK(got[i].name == ref_name);
    CHECK(got[i].tensor.shape() == ref_shape);
  }
}

}  // namespace

TEST_CASE("every model's parameter and buffer names and shapes equal PyTorch's") {
  const auto fx = testing::read_nn_fixture("model_names.json");
  for (const std::string name : {"mlp", "smallcnn", "resnet18", "resnet50"}) {
    Generator gen(0);
    nn::ModulePtr model = nn::make_model(name, gen);
    const auto& ref = fx.at(name);
    check_names(name + " parameters", model->named_parameters(), ref.at("parameters"));
    check_names(name + " buffers", model->named_buffers(), ref.at("buffers"));
    CHECK(model->num_parameters() == ref.at("num_parameters").get<int64_t>());
    for (const auto& p : model->named_parameters()) {
      CAPTURE(p.name);
      CHECK(p.tensor.requires_grad());
      CHECK(p.tensor.is_leaf());
    }
  }
  Generator gen(0);
  CHECK_THROWS_WITH_AS(nn::make_model("vgg", gen), doctest::Contains("known: mlp, smallcnn"),
                       std::invalid_argument);
}

TEST_CASE("initialisation follows PyTorch's bounds") {
  Generator gen(7);
  nn::SmallCNN cnn(gen);
  // nn.Linear/Conv2d default: U(−1/√fan_in, 1/√fan_in); fan_in of conv2 = 32·3·3 = 288,
  // of fc1 = 3136. The sample must fill most of the interval and stay inside it.
  auto check_uniform = [](const Tensor& t, double fan_in) {
    const double bound = 1.0 / std::sqrt(fan_in);
    double lo = 1e9, hi = -1e9;
    for (float v : t.to_vector()) lo = std::min<double>(lo, v), hi = std::max<double>(hi, v);
    INFO("bound " << bound << ", min " << lo << ", max " << hi);
    CHECK(lo >= -bound);
    CHECK(hi <= bound);
    CHECK(hi - lo > 1.8 * bound);
  };
  check_uniform(cnn.conv2->weight, 288);
  check_uniform(cnn.fc1->weight, 3136);
  check_uniform(cnn.fc1->bias, 3136);

  // torchvision ResNet: kaiming_normal(fan_out): std = √(2 / (Cout·k·k)); BN γ = 1, β = 0.
  auto r = nn::resnet18(gen);
  const auto w = r->layer3->named_parameters()[0].tensor.to_vector();  // layer3.0.conv1, (256, 128, 3, 3)
  double sq = 0;
  for (float v : w) sq += double(v) * v;
  const double std_got = std::sqrt(sq / double(w.size())), std_ref = std::sqrt(2.0 / (256 * 9));
  INFO("std " << std_got << " expected " << std_ref);
  CHECK(std::fabs(std_got - std_ref) < 0.02 * std_ref);
  CHECK(r->bn1->weight.to_vector() == std::vector<float>(64, 1.0f));
  CHECK(r->bn1->bias.to_vector() == std::vector<float>(64, 0.0f));
}

TEST_CASE("forward shapes: (N, 1, 28, 28) -> (N, 10) for every model") {
  for (const std::string name : {"mlp", "smallcnn", "resnet18"}) {
    CAPTURE(name);
    Generator gen(1);
    nn::ModulePtr model = nn::make_model(name, gen);
    Tensor x = Tensor::randn({2, 1, 28, 28}, gen);
    NoGradGuard no_grad;
    Tensor y = model->forward(x);
    CHECK(y.shape() == Shape{2, 10});
  }
  // ResNet-50 at a tenth of the width keeps this test fast; the layout is the same.
  Generator gen(1);
  auto r50 = nn::resnet50(gen, 1, 10, 8);
  NoGradGuard no_grad;
  CHECK(r50->forward(Tensor::randn({2, 1, 28, 28}, gen)).shape() == Shape{2, 10});
}

TEST_CASE("train() and eval() reach every module, BatchNorm updates running stats only in training") {
  Generator gen(3);
  auto r = nn::resnet18(gen, 1, 10, 4);
  Tensor x = Tensor::randn({4, 1, 8, 8}, gen);
  const auto before = r->bn1->running_mean.to_vector();
  r->eval();
  CHECK_FALSE(r->layer4->is_training());
  {
    NoGradGuard no_grad;
    r->forward(x);
  }
  CHECK(r->bn1->running_mean.to_vector() == before);
  r->train();
  CHECK(r->layer4->is_training());
  r->forward(x);
  CHECK(r->bn1->running_mean.to_vector() != before);
}

TEST_CASE("Sequential names its children 0, 1, ... and runs them in order") {
  Generator gen(4);
  nn::Sequential seq{std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(4, 3, gen),
                     std::make_shared<nn::ReLU>()};
  const auto names = seq.named_parameters();
  REQUIRE(names.size() == 2);
  CHECK(names[0].name == "1.weight");
  CHECK(names[1].name == "1.bias");
  Tensor x = Tensor::randn({5, 1, 2, 2}, gen);
  NoGradGuard no_grad;
  Tensor y = seq.forward(x);
  CHECK(y.shape() == Shape{5, 3});
  for (float v : y.to_vector()) CHECK(v >= 0.0f);
  CHECK(seq.str().find("(1) Linear(4 -> 3)") != std::string::npos);
}

TEST_CASE("Dropout: identity in eval, in training zeros about p and scales the rest") {
  Generator gen(5);
  nn::Dropout drop(0.25, gen);
  Tensor x = Tensor::ones({10000});
  drop.eval();
  CHECK(drop.forward(x).to_vector() == x.to_vector());
  drop.train();
  int zeros = 0;
  for (float v : drop.forward(x).to_vector()) {
    if (v == 0.0f) ++zeros;
    else CHECK(v == doctest::Approx(1.0 / 0.75));
  }
  CHECK(zeros > 2250);
  CHECK(zeros < 2750);
}

TEST_CASE("to(F16) converts parameters and buffers, the model still runs") {
  Generator gen(6);
  nn::MLP mlp(gen, 16, 8, 8, 4);
  const auto f32 = mlp.fc1->weight.to_vector();
  mlp.to(DType::F16);
  for (const auto& p : mlp.named_parameters()) {
    CAPTURE(p.name);
    CHECK(p.tensor.dtype() == DType::F16);
    CHECK(p.tensor.requires_grad());
    CHECK(p.tensor.is_leaf());
  }
  // the values are the F32 ones rounded to F16
  const auto f16 = mlp.fc1->weight.to_vector();
  for (size_t i = 0; i < f32.size(); ++i) CHECK(std::fabs(f16[i] - f32[i]) <= std::fabs(f32[i]) * 0x1p-11f);
  Tensor y = mlp.forward(Tensor::randn({3, 16}, gen).to(DType::F16));
  CHECK(y.dtype() == DType::F16);
  mlp.to(DType::F32);
  CHECK(mlp.fc3->bias.dtype() == DType::F32);
}

TEST_CASE("load_state copies values in place and names what does not fit") {
  Generator g1(1), g2(2);
  nn::MLP a(g1, 8, 4, 4, 2), b(g2, 8, 4, 4, 2), c(g2, 8, 5, 4, 2);
  Tensor held = b.fc1->weight;  // e.g. what an optimizer holds
  b.load_state(a.state());
  CHECK(b.fc1->weight.same(held));  // same tensor, new values
  CHECK(held.to_vector() == a.fc1->weight.to_vector());
  CHECK(b.fc3->bias.to_vector() == a.fc3->bias.to_vector());
  CHECK_THROWS_WITH_AS(c.load_state(a.state()), doctest::Contains("fc1.weight"), std::runtime_error);
}
