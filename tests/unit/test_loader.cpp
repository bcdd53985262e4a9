// DataLoader: every image exactly once per epoch, batches that hold the right pixels and
// labels, seeded and reproducible shuffling, drop_last, and bit-exact resume from a saved
// state (also through a checkpoint file); Tensors in and out of a checkpoint.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "framework/data/loader.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_tensor.h"

namespace {
hg::data::ImageDataset small_set(int64_t n) {
  hg::data::SyntheticOptions o;
  o.n = n;
  o.num_classes = 3;
  o.height = 4;
  o.width = 5;
  o.channels = 2;
  o.seed = 9;
  return hg::data::make_synthetic(o);
}

// The sequence of dataset indices a loader hands out over `batches` calls of next().
std::vector<std::vector<int64_t>> take(hg::DataLoader& loader, int batches) {
  std::vector<std::vector<int64_t>> out;
  hg::Batch b;
  for (int i = 0; i < batches; ++i) {
    if (loader.next(b)) out.push_back(b.indices);
    else out.push_back({-1});  // an epoch boundary
  }
  return out;
}
}  // namespace

TEST_CASE("loader: one epoch visits every image once, and batches carry its pixels and label") {
  const hg::data::ImageDataset ds = small_set(23);
  hg::DataLoader loader(ds, {/*batch_size=*/5, /*shuffle=*/true, /*drop_last=*/false, /*seed=*/3});
  CHECK(loader.batches_per_epoch() == 5);  // 5+5+5+5+3
  std::multiset<int64_t> seen;
  std::vector<int64_t> sizes;
  int64_t batch_no = 0;
  for (hg::Batch& b : loader) {
    REQUIRE(b.images.shape() == hg::Shape{b.size(), 2, 4, 5});
    CHECK(b.images.dtype() == hg::DType::F32);
    CHECK(b.targets.shape() == hg::Shape{b.size()});
    CHECK(b.index == batch_no++);
    CHECK(b.epoch == 0);
    sizes.push_back(b.size());
    const std::vector<float> t = b.targets.to_vector();
    for (int64_t j = 0; j < b.size(); ++j) {
      const int64_t i = b.indices[size_t(j)];
      seen.insert(i);
      CHECK(b.labels[size_t(j)] == ds.labels[size_t(i)]);
      CHECK(t[size_t(j)] == float(ds.labels[size_t(i)]));
      CHECK(std::memcmp(b.images.data<float>() + j * 40, ds.image(i), 40 * sizeof(float)) == 0);
    }
  }
  CHECK(sizes == std::vector<int64_t>{5, 5, 5, 5, 3});
  CHECK(seen.size() == 23);
  CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == 23);  // no repeats
  CHECK(loader.epoch() == 1);  // the loop ended the epoch
  CHECK(loader.position() == 0);
}

TEST_CASE("loader: shuffling is seeded, differs per epoch, and can be switched off") {
  const hg::data::ImageDataset ds = small_set(50);
  hg::DataLoader a(ds, {10, true, false, 7}), b(ds, {10, true, false, 7}), c(ds, {10, true, false, 8});
  const auto ta = take(a, 12), tb = take(b, 12), tc = take(c, 12);
  CHECK(ta == tb);
  CHECK(ta != tc);
  CHECK(ta[5] == std::vector<int64_t>{-1});  // epoch boundary after 5 batches
  CHECK(ta[0] != ta[6]);                     // epoch 1 starts differently from epoch 0
  CHECK(hg::shuffled_order(50, 7, 0) != hg::shuffled_order(50, 7, 1));
  std::vector<int64_t> sorted = hg::shuffled_order(50, 7, 1);
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 50; ++i) CHECK(sorted[size_t(i)] == i);  // a permutation

  hg::DataLoader plain(ds, {10, false, false, 0});
  const auto tp = take(plain, 2);
  CHECK(tp[0] == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(tp[1] == std::vector<int64_t>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19});
}

TEST_CASE("loader: drop_last skips the short last batch") {
  const hg::data::ImageDataset ds = small_set(23);
  hg::DataLoader loader(ds, {5, true, /*drop_last=*/true, 0});
  CHECK(loader.batches_per_epoch() == 4);
  int64_t batches = 0, images = 0;
  for (hg::Batch& b : loader) {
    CHECK(b.size() == 5);
    ++batches;
    images += b.size();
  }
  CHECK(batches == 4);
  CHECK(images == 20);
  CHECK_THROWS_AS(hg::DataLoader(ds, {0, true, false, 0}), std::invalid_argument);
}

TEST_CASE("loader: a restored state continues bit-for-bit, also through a checkpoint file") {
  const hg::data::ImageDataset ds = small_set(37);
  const hg::DataLoaderOptions opt{8, true, false, 11};
  hg::DataLoader straight(ds, opt);
  const auto reference = take(straight, 20);  // ~3.3 epochs without stopping

  for (int stop : {0, 3, 5, 6, 13}) {  // stop mid-epoch, right at a boundary, in epoch 2
    hg::DataLoader first(ds, opt);
    auto got = take(first, stop);

    // Save the state into a checkpoint file, read it back into a fresh loader.
    hg::io::Checkpoint ckpt;
    ckpt.meta["loader"] = first.state_json();
    char tmpl[] = "/tmp/hg_test_loader_XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    hg::io::save_checkpoint(dir + "/ckpt.hgc", ckpt);
    const hg::io::Checkpoint back = hg::io::load_checkpoint(dir + "/ckpt.hgc");
    std::system(("rm -rf '" + dir + "'").c_str());

    hg::DataLoader resumed(ds, {8, true, false, /*seed, overwritten by the state:*/ 999});
    resumed.set_state_json(back.meta["loader"]);
    const auto rest = take(resumed, 20 - stop);
    got.insert(got.end(), rest.begin(), rest.end());
    INFO("stopped after ", stop, " calls");
    CHECK(got == reference);
  }
  hg::DataLoader l(ds, opt);
  CHECK_THROWS_AS(l.set_state_json({{"seed", 1}, {"epoch", 0}}), std::invalid_argument);
  CHECK_THROWS_AS(l.set_state({1, 0, 38}), std::invalid_argument);
}

TEST_CASE("loader: an empty dataset is refused, a state for another dataset or past its end is refused") {
  const hg::data::ImageDataset empty = small_set(0);
  CHECK_THROWS_WITH_AS(hg::DataLoader(empty, {8, true, false, 0}), "DataLoader: the dataset has no images",
                       std::invalid_argument);

  const hg::data::ImageDataset ds = small_set(37), other = small_set(40);
  hg::DataLoader saved(ds, {8, true, false, 11});
  take(saved, 2);
  const nlohmann::json state = saved.state_json();
  CHECK(state["n"] == 37);
  hg::DataLoader l(other, {8, true, false, 11});
  const hg::LoaderState before = l.state();
  // A state of the 37-image set on the 40-image set: the same seed shuffles them differently.
  CHECK_THROWS_WITH_AS(l.set_state_json(state, "run.ckpt"),
                       "run.ckpt: loader state: saved for a dataset of 37 images, this one has 40 "
                       "(another --limit-train or dataset?)", std::invalid_argument);
  nlohmann::json past = {{"seed", 11}, {"epoch", 0}, {"position", 41}};
  CHECK_THROWS_WITH_AS(l.set_state_json(past, "run.ckpt"),
                       "run.ckpt: loader state: position 41 is past the end of the dataset (40 images)",
                       std::invalid_argument);
  nlohmann::json negative = {{"seed", 11}, {"epoch", -1}, {"position", 0}};
  CHECK_THROWS_WITH_AS(l.set_state_json(negative), doctest::Contains("epoch -1 and position 0 must be >= 0"),
                       std::invalid_argument);
  nlohmann::json seed = {{"seed", -3}, {"epoch", 0}, {"position", 0}};
  CHECK_THROWS_AS(l.set_state_json(seed), std::invalid_argument);
  CHECK_THROWS_AS(l.set_state_json(nlohmann::json::array()), std::invalid_argument);
  CHECK(l.state().epoch == before.epoch);  // a refused state changes nothing
  CHECK(l.state().position == before.position);
  // A state without "n" (written before the field existed) is taken as it is.
  nlohmann::json old = {{"seed", 11}, {"epoch", 1}, {"position", 16}};
  l.set_state_json(old);
  CHECK(l.position() == 16);
}

TEST_CASE("checkpoint: tensors go in and come back with dtype, shape and bits") {
  hg::Generator gen(5);
  const hg::Tensor w = hg::Tensor::randn({3, 4}, gen);
  const hg::Tensor h = hg::Tensor::randn({5}, gen, hg::DType::F16);
  const hg::Tensor d = hg::Tensor::randn({2, 2}, gen, hg::DType::F64);
  hg::io::Checkpoint c;
  hg::io::add_tensor(c, "w", w);
  hg::io::add_tensor(c, "h", h);
  hg::io::add_tensor(c, "d", d.reshape({4}));
  const hg::io::Checkpoint back = hg::io::decode_checkpoint(
      hg::io::encode_checkpoint(c).data(), hg::io::encode_checkpoint(c).size(), "memory");
  CHECK(back.at("h").dtype == "f16");
  const hg::Tensor w2 = hg::io::read_tensor(back, "w");
  CHECK(w2.shape() == w.shape());
  CHECK(w2.to_vector() == w.to_vector());
  CHECK(hg::io::read_tensor(back, "h").to_vector() == h.to_vector());
  CHECK(hg::io::read_tensor(back, "d").to_double_vector() == d.to_double_vector());

  hg::Tensor target = hg::Tensor::zeros({3, 4});
  const float* before = target.data<float>();
  hg::io::load_into(back, "w", target);
  CHECK(target.data<float>() == before);  // filled in place
  CHECK(target.to_vector() == w.to_vector());
  hg::Tensor wrong = hg::Tensor::zeros({4, 3});
  try {
    hg::io::load_into(back, "w", wrong);
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("(3, 4)") != std::string::npos);
    CHECK(std::string(e.what()).find("(4, 3)") != std::string::npos);
  }
}
