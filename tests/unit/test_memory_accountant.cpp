// The memory accountant: every byte of a training step under the right tag, the counts the
// ZeRO paper's formulas give (plus what halfgrad keeps beyond them), peaks, and no leak.
//
// The accountant is process-wide, so each check measures the change from a snapshot taken
// at the start of the test: bytes(tag) = now - before.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "framework/amp/master_weights.h"
#include "framework/io/run_log.h"
#include "framework/memory/accountant.h"
#include "framework/memory/formulas.h"
#include "framework/memory/report.h"
#include "framework/nn/layers.h"
#include "framework/nn/linear.h"
#include "framework/nn/sequential.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"

using hg::Device;
using hg::DType;
using hg::Tensor;
using hg::memory::Tag;

namespace {

struct Delta {
  hg::memory::ByTag before = hg::memory::usage(Device::CPU).current;
  int64_t operator()(Tag t) const {
    return hg::memory::usage(Device::CPU).current[int(t)] - before[int(t)];
  }
};

// 8 -> 16 -> 4: P = 8·16 + 16 + 16·4 + 4 = 212 parameters.
constexpr int64_t kP = 212;
std::shared_ptr<hg::nn::Sequential> small_mlp() {
  hg::Generator gen(0);
  return std::make_shared<hg::nn::Sequential>(std::initializer_list<hg::nn::ModulePtr>{
      std::make_shared<hg::nn::Linear>(8, 16, gen), std::make_shared<hg::nn::ReLU>(),
      std::make_shared<hg::nn::Linear>(16, 4, gen)});
}

// One step: forward, backward, step; the batch, the loss and the graph are freed on return.
void one_step(hg::nn::Module& model, hg::optim::Optimizer& opt, DType dtype,
              hg::amp::MasterWeights* mw = nullptr) {
  hg::Generator gen(1);
  Tensor x = Tensor::randn({5, 8}, gen, dtype);
  Tensor loss = hg::sum(hg::mul(model(x), model(x)));  // two forwards: a parameter used twice
  loss.backward();
  if (mw) mw->copy_grads_to_master();
  opt.step();
  if (mw) mw->copy_master_to_model();
}

void check_per_param(const Delta& d, int64_t params, int64_t grads, int64_t state) {
  CHECK(d(Tag::Parameter) == params * kP);
  CHECK(d(Tag::Gradient) == grads * kP);
  CHECK(d(Tag::OptimizerState) == state * kP);
  CHECK(d(Tag::Activation) == 0);  // the graph is gone
  CHECK(d(Tag::Temporary) == 0);   // nothing else left behind
}

}  // namespace

TEST_CASE("accountant: FP32 SGD and Adam hold 4 + 4 + state bytes per parameter, as the formulas say") {
  using hg::memory::OptimizerKind;
  using hg::memory::Precision;
  {
    Delta d;
    auto model = small_mlp();
    hg::optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
    one_step(*model, opt, DType::F32);
    const auto f = hg::memory::bytes_per_param(OptimizerKind::SGDMomentum, Precision::FP32);
    check_per_param(d, f.parameters, f.gradients, f.optimizer_state);  // 4 + 4 + 4
    CHECK(f.total() == 12);
  }
  {
    Delta d;
    auto model = small_mlp();
    hg::optim::SGD opt(model->parameters(), {.lr = 0.1});
    one_step(*model, opt, DType::F32);
    check_per_param(d, 4, 4, 0);
  }
  {
    Delta d;
    auto model = small_mlp();
    hg::optim::Adam opt(model->parameters(), {});
    one_step(*model, opt, DType::F32);
    const auto f = hg::memory::bytes_per_param(OptimizerKind::Adam, Precision::FP32);
    check_per_param(d, f.parameters, f.gradients, f.optimizer_state);  // 4 + 4 + 8
    CHECK(f.total() == 16);
  }
}

TEST_CASE("accountant: mixed-precision Adam holds the paper's 2 + 2 + 12 bytes, plus 4 for the F32 master gradient") {
  Delta d;
  auto model = small_mlp();
  model->to(DType::F16);
  hg::amp::MasterWeights mw(model->parameters());
  hg::optim::Adam opt(mw.master_params(), {});
  one_step(*model, opt, DType::F16, &mw);
  const auto f = hg::memory::bytes_per_param(hg::memory::OptimizerKind::Adam, hg::memory::Precision::Mixed);
  CHECK(f.parameters == 2);
  CHECK(f.gradients == 2);
  CHECK(f.optimizer_state == 12);  // F32 master 4 + m 4 + v 4
  CHECK(f.total() == 16);
  // halfgrad's MasterWeights keeps the master's gradient in F32 too (copy_grads_to_master
  // unscales into it): 2 + (2 + 4) + 12 = 20 bytes per parameter.
  check_per_param(d, f.parameters, f.gradients + 4, f.optimizer_state);
}

TEST_CASE("accountant: mixed-precision SGD, 2 + (2 + 4) + 4") {
  Delta d;
  auto model = small_mlp();
  model->to(DType::F16);
  hg::amp::MasterWeights mw(model->parameters());
  hg::optim::SGD opt(mw.master_params(), {.lr = 0.1});
  one_step(*model, opt, DType::F16, &mw);
  const auto f = hg::memory::bytes_per_param(hg::memory::OptimizerKind::SGD, hg::memory::Precision::Mixed);
  check_per_param(d, f.parameters, f.gradients + 4, f.optimizer_state);
  CHECK(f.total() == 8);
}

TEST_CASE("accountant: the forward pass's saved tensors are activations, and backward frees them") {
  hg::Generator gen(2);
  auto lin = std::make_shared<hg::nn::Linear>(4, 3, gen);
  Delta d;
  {
    Tensor x = Tensor::randn({2, 4}, gen);  // 32 bytes
    Tensor h = (*lin)(x);                   // (2, 3): 24 bytes
    Tensor y = hg::relu(h);                 // 24 bytes
    Tensor loss = hg::sum(y);
    // linear keeps x, relu keeps h, sum keeps y; the parameters stay parameters.
    CHECK(d(Tag::Activation) == 32 + 24 + 24);
    CHECK(d(Tag::Parameter) == 0);
    CHECK(hg::memory::tag_of(x) == Tag::Activation);
    CHECK(hg::memory::tag_of(lin->weight) == Tag::Parameter);
    CHECK(hg::memory::tag_of(loss) == Tag::Temporary);  // nothing keeps the loss for backward
    loss.backward();
    CHECK(d(Tag::Gradient) == (4 * 3 + 3) * 4);  // weight and bias .grad
    CHECK(hg::memory::tag_of(lin->weight.grad()) == Tag::Gradient);
  }
  CHECK(d(Tag::Activation) == 0);
  CHECK(d(Tag::Temporary) == 0);
}

TEST_CASE("accountant: a TagScope tags what is allocated inside it, and scopes nest") {
  Delta d;
  CHECK(hg::memory::current_tag() == Tag::Temporary);
  {
    hg::memory::TagScope outer(Tag::OptimizerState);
    Tensor a = Tensor::zeros({10});  // 40 bytes
    {
      hg::memory::TagScope inner(Tag::Parameter);
      Tensor b = Tensor::zeros({3});  // 12 bytes
      CHECK(d(Tag::Parameter) == 12);
    }
    CHECK(hg::memory::current_tag() == Tag::OptimizerState);
    CHECK(d(Tag::OptimizerState) == 40);
  }
  CHECK(hg::memory::current_tag() == Tag::Temporary);
  CHECK(d(Tag::OptimizerState) == 0);
  CHECK(d(Tag::Parameter) == 0);
}

TEST_CASE("accountant: peak and window keep the largest total and what each tag held then") {
  hg::memory::reset_peak();
  hg::memory::take_window(Device::CPU);
  const auto start = hg::memory::usage(Device::CPU);
  {
    hg::memory::TagScope scope(Tag::Gradient);
    Tensor g = Tensor::empty({100});  // 400 bytes of gradients
    Tensor t;
    {
      hg::memory::TagScope temp(Tag::Temporary);
      t = Tensor::empty({250});  // +1000 bytes: the peak is here, 1400 above the start
    }
    t = Tensor();                      // freed
    Tensor a = Tensor::empty({300});   // 1200 gradient bytes: total 1600 above the start
  }
  const auto u = hg::memory::usage(Device::CPU);
  CHECK(u.total() == start.total());  // all freed
  CHECK(u.peak.total == start.total() + 1600);
  CHECK(u.peak.by_tag[int(Tag::Gradient)] == start.current[int(Tag::Gradient)] + 1600);
  CHECK(u.peak.by_tag[int(Tag::Temporary)] == start.current[int(Tag::Temporary)]);
  CHECK(u.tag_peak[int(Tag::Temporary)] == start.current[int(Tag::Temporary)] + 1000);
  const auto w = hg::memory::take_window(Device::CPU);
  CHECK(w.total == start.total() + 1600);
  // A new window starts from what is held now.
  CHECK(hg::memory::take_window(Device::CPU).total == u.total());
  // reset_peak forgets the old peak.
  hg::memory::reset_peak();
  CHECK(hg::memory::usage(Device::CPU).peak.total == u.total());
}

TEST_CASE("accountant: retagging moves bytes between tags and never changes the total") {
  Delta d;
  const int64_t total = hg::memory::usage(Device::CPU).total();
  Tensor t = Tensor::empty({16});  // 64 bytes, Temporary
  CHECK(hg::memory::tag_of(t) == Tag::Temporary);
  hg::memory::retag(t, Tag::Parameter);
  CHECK(hg::memory::tag_of(t) == Tag::Parameter);
  CHECK(d(Tag::Parameter) == 64);
  CHECK(d(Tag::Temporary) == 0);
  hg::memory::mark_saved(t);  // a parameter fed to an op stays a parameter
  CHECK(d(Tag::Parameter) == 64);
  CHECK(hg::memory::usage(Device::CPU).total() == total + 64);
  Tensor view = t.reshape({4, 4});  // the same storage: no new bytes
  CHECK(hg::memory::usage(Device::CPU).total() == total + 64);
  t = Tensor();
  view = Tensor();
  CHECK(d(Tag::Parameter) == 0);
}

TEST_CASE("accountant: the printed table and the run log's memory event") {
  const std::string table = hg::memory::memory_table(Device::CPU);
  INFO(table);
  for (const char* word : {"memory on cpu: peak", "parameters", "gradients", "optimizer_state", "activations",
                           "temporaries", "total", "at peak", "own peak"})
    CHECK(table.find(word) != std::string::npos);
  CHECK(hg::memory::human_bytes(512) == "512 B");
  CHECK(hg::memory::human_bytes(1536) == "1.5 KiB");
  CHECK(hg::memory::human_bytes(3 * 1024 * 1024) == "3.00 MiB");

  const std::string dir = (std::filesystem::temp_directory_path() / "hg_test_memory_event").string();
  std::filesystem::remove_all(dir);
  {
    hg::io::RunLog log(dir, {{"lesson", "test"}});
    hg::memory::take_window(Device::CPU);
    Tensor big;
    {
      hg::memory::TagScope scope(Tag::Activation);
      big = Tensor::empty({1000});
    }
    big = Tensor();
    hg::memory::log_memory(log, 7, Device::CPU);
    // The writer refuses an event that breaks the schema.
    nlohmann::json bad = hg::memory::memory_event_fields(Device::CPU, hg::memory::Snapshot{}, 0);
    bad["peak"] = 5;  // not the sum of the categories (all 0)
    CHECK_THROWS_WITH(log.memory(8, bad), doctest::Contains("not the sum"));
    bad.erase("gradients");
    CHECK_THROWS_WITH(log.memory(8, bad), doctest::Contains("'gradients'"));
    nlohmann::json negative = hg::memory::memory_event_fields(Device::CPU, hg::memory::Snapshot{}, -1);
    CHECK_THROWS_WITH(log.memory(8, negative), doctest::Contains("'live'"));
  }
  const auto events = hg::io::read_events(dir + "/events.jsonl");
  CHECK(events.unknown_types == 0);
  int found = 0;
  for (const auto& e : events.events) {
    if (e["type"] != "memory") continue;
    ++found;
    CHECK(e["step"] == 7);
    CHECK(e["device"] == "cpu");
    CHECK(e["activations"].get<int64_t>() >= 4000);  // the 4000-byte tensor was in the window
    int64_t sum = 0;
    for (const char* k : {"parameters", "gradients", "optimizer_state", "activations", "temporaries"})
      sum += e[k].get<int64_t>();
    CHECK(e["peak"].get<int64_t>() == sum);
  }
  CHECK(found == 1);
  std::filesystem::remove_all(dir);
}
