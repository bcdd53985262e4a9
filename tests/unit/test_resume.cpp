// Checkpoints: a round trip restores every tensor exactly, and a run that stops, saves,
// and resumes in a fresh process state continues bit for bit like a run that never stopped
// (parameters, BatchNorm running statistics, optimizer buffers, loader position).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "framework/data/loader.h"
#include "framework/nn/models/mlp.h"
#include "framework/nn/models/resnet.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"
#include "framework/train/checkpoint.h"
#include "framework/train/step.h"

using namespace hg;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("hg_test_resume_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

data::ImageDataset synthetic(int64_t n) {
  data::SyntheticOptions o;
  o.n = n;
  o.num_classes = 4;
  o.height = o.width = 8;
  o.seed = 3;
  return data::make_synthetic(o);
}

// A model with every kind of state: a narrow ResNet-18 has BatchNorm buffers, and with
// SGD-momentum or AdamW the optimizer has buffers too.
struct Setup {
  nn::ModulePtr model;
  std::unique_ptr<optim::Optimizer> opt;
  Setup(const std::string& kind, uint64_t init_seed) {
    Generator gen(init_seed);
    if (kind == "resnet_sgd") {
      model = nn::resnet18(gen, 1, 4, 4);
      optim::SGDOptions o;
      o.lr = 0.05;
      o.momentum = 0.9;
      o.weight_decay = 5e-4;
      opt = std::make_unique<optim::SGD>(model->parameters(), o);
    } else {
      model = std::make_shared<nn::MLP>(gen, 64, 32, 16, 4);
      optim::AdamOptions o;
      o.lr = 1e-3;
      o.weight_decay = 0.01;
      opt = std::make_unique<optim::AdamW>(model->parameters(), o);
    }
  }
};

// Runs `steps` optimizer steps, reading batches from the loader across epoch boundaries.
std::vector<double> run_steps(Setup& s, DataLoader& loader, int steps) {
  std::vector<double> losses;
  Batch b;
  while (static_cast<int>(losses.size()) < steps) {
    if (!loader.next(b)) continue;  // end of an epoch: the loader moves on to the next
    losses.push_back(train::train_step(*s.model, *s.opt, b.images, b.labels).loss);
  }
  return losses;
}

// Every tensor of the model, bit for bit (memcmp of the float bits via to_vector equality
// would treat -0 == 0; compare the raw bytes).
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

void check_same_state(const nn::Module& a, const nn::Module& b) {
  const auto sa = a.state(), sb = b.state();
  REQUIRE(sa.size() == sb.size());
  int differing = 0;
  std::string first;
  for (size_t i = 0; i < sa.size(); ++i)
    if (!same_bits(sa[i].tensor, sb[i].tensor)) {
      if (differing++ == 0) first = sa[i].name;
    }
  INFO(differing << " of " << sa.size() << " tensors differ; first: " << first);
  CHECK(differing == 0);
}

}  // namespace

TEST_CASE("checkpoint round trip restores model, optimizer and training state exactly") {
  const data::ImageDataset ds = synthetic(96);
  DataLoaderOptions lo;
  lo.batch_size = 16;
  lo.seed = 5;
  for (const std::string kind : {"resnet_sgd", "mlp_adamw"}) {
    CAPTURE(kind);
    Setup a(kind, 1);
    DataLoader loader(ds, lo);
    run_steps(a, loader, 4);
    train::TrainingState st;
    st.step = 4;
    st.epoch = loader.epoch();
    st.batch_in_epoch = loader.position() / lo.batch_size;
    st.generators["init"] = 0xDEADBEEFCAFEF00Dull;  // a 64-bit state survives the JSON
    st.loader = loader.state_json();
    const std::string path = temp_path(kind + ".ckpt");
    train::save_training_checkpoint(path, *a.model, a.opt.get(), st);

    Setup b(kind, 2);  // different initial weights
    const train::TrainingState back = train::load_training_checkpoint(path, *b.model, b.opt.get());
    check_same_state(*a.model, *b.model);
    const auto oa = a.opt->state_dict(), ob = b.opt->state_dict();
    CHECK(oa.meta == ob.meta);
    REQUIRE(oa.tensors.size() == ob.tensors.size());
    CHECK(oa.tensors.size() > 0);
    for (size_t i = 0; i < oa.tensors.size(); ++i) {
      CHECK(oa.tensors[i].name == ob.tensors[i].name);
      CHECK(same_bits(oa.tensors[i].tensor, ob.tensors[i].tensor));
    }
    CHECK(back.step == 4);
    CHECK(back.epoch == st.epoch);
    CHECK(back.batch_in_epoch == st.batch_in_epoch);
    CHECK(back.generators.at("init") == 0xDEADBEEFCAFEF00Dull);
    CHECK(back.loader == st.loader);
  }
}

TEST_CASE("resume is bit-exact: N steps + save + resume + M steps == N + M steps straight") {
  const data::ImageDataset ds = synthetic(80);  // 5 batches of 16: the run crosses epochs
  DataLoaderOptions lo;
  lo.batch_size = 16;
  lo.seed = 11;
  const int N = 7, M = 6;  // stop in the middle of the second epoch
  for (const std::string kind : {"resnet_sgd", "mlp_adamw"}) {
    CAPTURE(kind);
    // Straight run.
    Setup straight(kind, 1);
    DataLoader l1(ds, lo);
    std::vector<double> straight_losses = run_steps(straight, l1, N + M);

    // Interrupted run: N steps, save, then everything is thrown away.
    const std::string path = temp_path(kind + "_resume.ckpt");
    std::vector<double> resumed_losses;
    {
      Setup first(kind, 1);
      DataLoader l2(ds, lo);
      resumed_losses = run_steps(first, l2, N);
      train::TrainingState st;
      st.step = N;
      st.loader = l2.state_json();
      train::save_training_checkpoint(path, *first.model, first.opt.get(), st);
    }
    // A fresh process state: other initial weights, a new optimizer, a new loader.
    Setup second(kind, 123);
    DataLoader l3(ds, lo);
    const train::TrainingState st = train::load_training_checkpoint(path, *second.model, second.opt.get());
    l3.set_state_json(st.loader);
    CHECK(st.step == N);
    const std::vector<double> rest = run_steps(second, l3, M);
    resumed_losses.insert(resumed_losses.end(), rest.begin(), rest.end());

    CHECK(resumed_losses == straight_losses);  // exact equality, every step
    check_same_state(*straight.model, *second.model);
    CHECK(second.opt->steps_taken() == N + M);
  }
}

TEST_CASE("a checkpoint that does not fit is refused and leaves the model as it was") {
  Generator g(1);
  nn::MLP small(g, 64, 32, 16, 4), other(g, 64, 20, 16, 4);
  const std::string path = temp_path("small.ckpt");
  train::save_training_checkpoint(path, small, nullptr, {});
  const auto before = other.fc3->weight.to_vector();
  CHECK_THROWS_WITH_AS(train::load_training_checkpoint(path, other, nullptr),
                       doctest::Contains("fc1.weight"), std::runtime_error);
  CHECK(other.fc3->weight.to_vector() == before);  // nothing half-loaded

  // A damaged file: the container's CRC refuses it, naming the file.
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  CHECK_THROWS_WITH_AS(train::load_training_checkpoint(path, small, nullptr),
                       doctest::Contains(path.c_str()), std::runtime_error);
}
