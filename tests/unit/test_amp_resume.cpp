// A run with a GradScaler, stopped at a checkpoint and resumed, matches the uninterrupted
// run bit for bit: the loss scale, the growth counter, the parameters and the momentum.
// The scaler's state travels in the checkpoint's metadata (TrainingState::extra), through
// the same glue the chapters use (framework/train/checkpoint.h).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/data/loader.h"
#include "framework/nn/models/mlp.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"
#include "framework/train/checkpoint.h"

using hg::DType;
using hg::Tensor;

namespace {

// A small AMP setup: F32 MLP, F16 autocast, a scaler that starts far too high (2^40: the
// first 20 steps overflow and are skipped) and grows every 3 good steps, so that after
// step 20 the scale draws a sawtooth (x2, then an overflow and x0.5) across the checkpoint
// at step 22, where a growth count of 1 is in flight.
struct Run {
  hg::Generator gen{5};
  hg::nn::MLP model{gen, 144, 32, 16, 4};
  hg::optim::SGD opt{model.parameters(), {.lr = 0.05, .momentum = 0.9}};
  hg::amp::GradScaler scaler{[] {
    hg::amp::ScaleRule r;
    r.init_scale = 1099511627776.0f;  // 2^40
    r.growth_interval = 3;
    return r;
  }()};
  hg::DataLoader loader;
  int64_t step = 0, skipped = 0;
  explicit Run(const hg::data::ImageDataset& ds) : loader(ds, {32, true, false, 9}) {}

  // Trains until `until` optimizer calls (skipped ones included) have been made.
  void train_until(int64_t until) {
    hg::Batch b;
    while (step < until) {
      if (!loader.next(b)) continue;  // the next epoch starts on the following call
      opt.zero_grad();
      Tensor loss;
      {
        hg::amp::Autocast ac(DType::F16);
        loss = hg::cross_entropy(model(b.images), b.labels);
      }
      scaler.scale(loss).backward();
      skipped += !scaler.step(opt);
      scaler.update();
      ++step;
    }
  }
  hg::train::TrainingState state() const {
    hg::train::TrainingState s;
    s.step = step;
    s.loader = loader.state_json();
    s.extra["grad_scaler"] = scaler.state_dict();
    s.extra["skipped"] = skipped;
    return s;
  }
  void restore(const std::string& path) {
    const hg::train::TrainingState s = hg::train::load_training_checkpoint(path, model, &opt);
    step = s.step;
    skipped = s.extra.at("skipped").get<int64_t>();
    loader.set_state_json(s.loader);
    scaler.load_state_dict(s.extra.at("grad_scaler"));
  }
};

// Number of elements whose bits differ (0 = bit-identical).
int64_t bits_differ(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  REQUIRE(a.dtype() == b.dtype());
  const std::vector<float> x = a.to_vector(), y = b.to_vector();
  int64_t n = 0;
  for (size_t i = 0; i < x.size(); ++i) n += std::memcmp(&x[i], &y[i], sizeof(float)) != 0;
  return n;
}

}  // namespace

TEST_CASE("a GradScaler run resumed from a checkpoint matches the uninterrupted run bit for bit") {
  hg::data::SyntheticOptions o;
  o.n = 200;  // 7 batches per epoch: the checkpoint falls mid-epoch
  o.noise = 1.0f;
  const auto ds = hg::data::make_synthetic(o);
  const int64_t total = 40, stop_at = 22;
  const std::string path =
      (std::filesystem::temp_directory_path() / "hg_test_amp_resume.ckpt").string();

  Run straight(ds);
  straight.train_until(total);

  {
    Run first(ds);
    first.train_until(stop_at);
    // Something must happen on both sides of the checkpoint for the test to mean anything.
    CHECK(first.skipped > 0);                        // overflows while S came down from 2^40
    CHECK(first.scaler.growth_tracker() > 0);        // a growth count in flight is saved
    hg::train::save_training_checkpoint(path, first.model, &first.opt, first.state());
  }
  Run resumed(ds);
  resumed.restore(path);
  CHECK(resumed.scaler.get_scale() != hg::amp::ScaleRule{}.init_scale);
  resumed.train_until(total);
  std::filesystem::remove(path);

  INFO("straight: scale " << straight.scaler.get_scale() << ", tracker "
                          << straight.scaler.growth_tracker() << ", skipped " << straight.skipped);
  INFO("resumed:  scale " << resumed.scaler.get_scale() << ", tracker "
                          << resumed.scaler.growth_tracker() << ", skipped " << resumed.skipped);
  CHECK(resumed.scaler.get_scale() == straight.scaler.get_scale());
  CHECK(resumed.scaler.growth_tracker() == straight.scaler.growth_tracker());
  CHECK(resumed.skipped == straight.skipped);
  const auto p1 = straight.model.named_parameters(), p2 = resumed.model.named_parameters();
  REQUIRE(p1.size() == p2.size());
  for (size_t i = 0; i < p1.size(); ++i) {
    INFO(p1[i].name);
    CHECK(bits_differ(p1[i].tensor, p2[i].tensor) == 0);
  }
}

TEST_CASE("without the scaler's state the resumed run departs (the state is needed)") {
  hg::data::SyntheticOptions o;
  o.n = 200;
  o.noise = 1.0f;
  const auto ds = hg::data::make_synthetic(o);
  const std::string path =
      (std::filesystem::temp_directory_path() / "hg_test_amp_resume2.ckpt").string();
  Run straight(ds);
  straight.train_until(40);
  {
    Run first(ds);
    first.train_until(22);
    hg::train::save_training_checkpoint(path, first.model, &first.opt, first.state());
  }
  Run resumed(ds);
  const hg::train::TrainingState s = hg::train::load_training_checkpoint(path, resumed.model, &resumed.opt);
  resumed.step = s.step;
  resumed.loader.set_state_json(s.loader);  // everything but the scaler: it restarts at 2^40
  resumed.train_until(40);
  std::filesystem::remove(path);
  CHECK(resumed.scaler.get_scale() != straight.scaler.get_scale());
}

TEST_CASE("CheckpointExtras carries the scaler and extra tensors, a checkpoint without them is refused") {
  hg::data::SyntheticOptions o;
  o.n = 200;
  o.noise = 1.0f;
  const auto ds = hg::data::make_synthetic(o);
  const std::string path =
      (std::filesystem::temp_directory_path() / "hg_test_amp_resume3.ckpt").string();
  Run straight(ds);
  straight.train_until(40);
  Tensor kept = Tensor::from_vector(std::vector<float>{1.5f, -2.0f, 3.25f}, {3});  // e.g. a master weight
  {
    Run first(ds);
    first.train_until(22);
    hg::train::save_training_checkpoint(path, first.model, &first.opt, first.state(),
                                        {"master", {{"w", kept}}, &first.scaler});
  }
  Run resumed(ds);
  Tensor back = Tensor::zeros({3});
  const hg::train::TrainingState s =
      hg::train::load_training_checkpoint(path, resumed.model, &resumed.opt, nullptr, {"master", {{"w", back}}, &resumed.scaler});
  CHECK(back.to_vector() == kept.to_vector());
  resumed.step = s.step;
  resumed.loader.set_state_json(s.loader);
  resumed.train_until(40);
  CHECK(resumed.scaler.get_scale() == straight.scaler.get_scale());  // the scaler came back with the run
  CHECK(resumed.scaler.growth_tracker() == straight.scaler.growth_tracker());
  // A checkpoint saved without the scaler cannot give one back: refused, nothing touched.
  {
    Run first(ds);
    first.train_until(5);
    hg::train::TrainingState without_scaler = first.state();
    without_scaler.extra.erase("grad_scaler");  // as a chapter without a scaler writes it
    hg::train::save_training_checkpoint(path, first.model, &first.opt, without_scaler);
  }
  Run other(ds);
  CHECK_THROWS(hg::train::load_training_checkpoint(path, other.model, &other.opt, nullptr, {"", {}, &other.scaler}));
  std::filesystem::remove(path);
}
