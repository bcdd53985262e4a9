// Training end to end on the synthetic set (datasets/synthetic.h), in seconds:
//   - smoke: the loss falls and held-out accuracy passes a bar, for the MLP and SmallCNN;
//   - determinism: the same seed gives the same loss sequence, bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "framework/data/loader.h"
#include "framework/eval/metrics.h"
#include "framework/nn/models/mlp.h"
#include "framework/nn/models/small_cnn.h"
#include "framework/optim/sgd.h"
#include "framework/train/step.h"

using namespace hg;

namespace {

data::ImageDataset synthetic(int64_t n, uint64_t seed) {
  data::SyntheticOptions o;
  o.n = n;
  o.num_classes = 4;
  o.height = o.width = 12;
  o.noise = 0.25f;
  o.seed = seed;
  o.prototype_seed = 99;  // train and test share the class prototypes
  return data::make_synthetic(o);
}

nn::ModulePtr small_model(const std::string& which, uint64_t seed) {
  Generator gen(seed);
  if (which == "mlp") return std::make_shared<nn::MLP>(gen, 144, 64, 32, 4);
  return std::make_shared<nn::SmallCNN>(gen, 1, 8, 16, 32, 4, 12);
}

struct Run {
  std::vector<double> losses;       // every step
  std::vector<double> epoch_loss;   // mean per epoch
  double test_accuracy = 0;
};

Run train_run(const std::string& which, uint64_t seed, int epochs) {
  const data::ImageDataset train_set = synthetic(512, 1), test_set = synthetic(256, 2);
  nn::ModulePtr model = small_model(which, seed);
  optim::SGDOptions o;
  o.lr = 0.05;
  o.momentum = 0.9;
  optim::SGD opt(model->parameters(), o);
  DataLoaderOptions lo;
  lo.batch_size = 32;
  lo.seed = seed;
  DataLoader loader(train_set, lo);
  Run run;
  for (int e = 0; e < epochs; ++e) {
    double sum = 0;
    int64_t n = 0;
    for (Batch& b : loader) {
      const train::StepResult r = train::train_step(*model, opt, b.images, b.labels);
      run.losses.push_back(r.loss);
      sum += r.loss;
      ++n;
    }
    run.epoch_loss.push_back(sum / n);
  }
  run.test_accuracy = eval::accuracy(test_set.labels, train::predict(*model, test_set, 100));
  return run;
}

}  // namespace

TEST_CASE("smoke: MLP and SmallCNN learn the synthetic set (loss falls, held-out accuracy > 90%)") {
  for (const std::string which : {"mlp", "smallcnn"}) {
    CAPTURE(which);
    const Run run = train_run(which, 0, 4);
    std::string losses;
    for (double l : run.epoch_loss) losses += std::to_string(l) + " ";
    INFO("epoch losses " << losses << ", test accuracy " << run.test_accuracy);
    MESSAGE(which << ": epoch losses " << losses << ", test accuracy " << run.test_accuracy);
    CHECK(std::isfinite(run.epoch_loss.back()));
    CHECK(run.epoch_loss.back() < 0.5 * run.epoch_loss.front());
    // 4 classes: chance is 25%. The classes are separable; a trained model gets > 90%.
    CHECK(run.test_accuracy > 0.9);
  }
}

TEST_CASE("determinism: the same seed gives the same loss sequence, bit for bit") {
  const Run a = train_run("smallcnn", 7, 1), b = train_run("smallcnn", 7, 1), c = train_run("smallcnn", 8, 1);
  REQUIRE(a.losses.size() == b.losses.size());
  size_t first_diff = a.losses.size();
  for (size_t i = 0; i < a.losses.size(); ++i)
    if (a.losses[i] != b.losses[i]) {
      first_diff = i;
      break;
    }
  INFO("first differing step: " << first_diff << " of " << a.losses.size());
  CHECK(first_diff == a.losses.size());
  CHECK(a.losses != c.losses);  // and the seed does matter
}
