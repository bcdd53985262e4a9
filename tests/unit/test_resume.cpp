// Checkpoints: a round trip restores every tensor exactly, and a run that stops, saves,
// and resumes in a fresh process state continues bit for bit like a run that never stopped
// (parameters, BatchNorm running statistics, optimizer buffers, loader position). A
// checkpoint that does not fit (dtype, shape, names), holds NaN or inf, or counts below
// zero is refused naming the file; a model with NaN weights is never saved.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
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
#include "tests/unit/child_limits.h"

using namespace hg;
namespace fs = std::filesystem;

namespace {

// A test case's own scratch folder in the temporary directory, removed with everything in
// it when the test case ends, passed or failed (RAII: a failed REQUIRE unwinds through it).
class ScratchDir {
 public:
  ScratchDir() : dir_(fs::temp_directory_path() / ("hg_test_resume_" + std::to_string(::getpid()))) {
    fs::create_directories(dir_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

 private:
  fs::path dir_;
};

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
  const ScratchDir scratch;
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
    const std::string path = scratch.path(kind + ".ckpt");
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
  const ScratchDir scratch;
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
    const std::string path = scratch.path(kind + "_resume.ckpt");
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
  const ScratchDir scratch;
  Generator g(1);
  nn::MLP small(g, 64, 32, 16, 4), other(g, 64, 20, 16, 4);
  const std::string path = scratch.path("small.ckpt");
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

// ---- what a checkpoint load refuses, and what a save refuses -------------------------------

namespace {

// A copy of `src` with entry `name` changed by `edit` (its raw bytes) and the metadata by
// `edit_meta`: the damage a hand-edited or foreign file brings, behind a correct CRC.
io::Checkpoint edited(const io::Checkpoint& src, const std::string& name,
                      const std::function<void(std::vector<uint8_t>&)>& edit,
                      const std::function<void(nlohmann::json&)>& edit_meta = {}) {
  io::Checkpoint out;
  out.meta = src.meta;
  if (edit_meta) edit_meta(out.meta);
  for (const io::CheckpointEntry& e : src.entries()) {
    std::vector<uint8_t> bytes = e.bytes;
    if (e.name == name) edit(bytes);
    out.add(e.name, e.dtype, e.shape, bytes.data(), bytes.size());
  }
  return out;
}

void put_float(std::vector<uint8_t>& bytes, size_t index, float v) {
  std::memcpy(bytes.data() + index * 4, &v, 4);
}

// The message of load_training_checkpoint(path, ...) on a fresh MLP + SGD, or "".
std::string load_error(const std::string& path, DataLoader* loader = nullptr) {
  Setup s("mlp_adamw", 7);
  try {
    train::load_training_checkpoint(path, *s.model, s.opt.get(), loader);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// A checkpoint of a few AdamW steps of the MLP, in memory.
io::Checkpoint trained_checkpoint(const data::ImageDataset& ds, DataLoader& loader) {
  Setup a("mlp_adamw", 1);
  run_steps(a, loader, 3);
  train::TrainingState st;
  st.step = 3;
  st.loader = loader.state_json();
  (void)ds;
  return train::make_checkpoint(*a.model, a.opt.get(), st);
}

}  // namespace

TEST_CASE("a checkpoint load refuses other dtypes and shapes, naming the file, the entry, expected and found") {
  const ScratchDir scratch;
  const data::ImageDataset ds = synthetic(48);
  DataLoader loader(ds, {16, true, false, 5});
  const io::Checkpoint good = trained_checkpoint(ds, loader);
  const std::string path = scratch.path("dtype.ckpt");
  io::save_checkpoint(path, good);
  CHECK(load_error(path).empty());

  // The same MLP in F16 (chapter 06's model) must not take the F32 weights silently.
  Setup half("mlp_adamw", 7);
  half.model->to(DType::F16);
  CHECK_THROWS_WITH_AS(train::load_training_checkpoint(path, *half.model, nullptr),
                       (path + ": entry 'model.fc1.weight' is f32 (32, 64) in the checkpoint, the model "
                               "expects f16 (32, 64)").c_str(),
                       std::runtime_error);

  // A tensor the model does not have.
  io::Checkpoint extra = edited(good, "", [](auto&) {});
  const float one = 1.0f;
  extra.add("model.fc4.weight", "f32", {1}, &one, 4);
  io::save_checkpoint(path, extra);
  CHECK(load_error(path) == path + ": entry 'model.fc4.weight' is not a tensor of this model (a checkpoint of "
                                   "another model?)");

  // Optimizer state in another dtype than the optimizer keeps (F32 for an F32 parameter).
  io::Checkpoint f64_state;
  f64_state.meta = good.meta;
  for (const io::CheckpointEntry& e : good.entries()) {
    if (e.name != "optim.0.exp_avg") {
      f64_state.add(e.name, e.dtype, e.shape, e.bytes.data(), e.bytes.size());
      continue;
    }
    std::vector<double> wide(e.bytes.size() / 4);
    for (size_t i = 0; i < wide.size(); ++i) {
      float f;
      std::memcpy(&f, e.bytes.data() + 4 * i, 4);
      wide[i] = f;
    }
    f64_state.add(e.name, "f64", e.shape, wide.data(), wide.size() * 8);
  }
  io::save_checkpoint(path, f64_state);
  CHECK(load_error(path) == path + ": entry 'optim.0.exp_avg' is f64 (32, 64) in the checkpoint, the optimizer "
                                   "keeps it as f32 (32, 64)");

  // Optimizer state for a parameter this optimizer does not have, and of the wrong shape.
  io::Checkpoint stray = edited(good, "", [](auto&) {});
  std::vector<float> zeros(6, 0.0f);
  stray.add("optim.99.exp_avg", "f32", {6}, zeros.data(), 24);
  io::save_checkpoint(path, stray);
  CHECK(load_error(path) == path + ": entry 'optim.99.exp_avg' names no parameter of this optimizer (it has 6)");
  io::Checkpoint misshapen;
  misshapen.meta = good.meta;
  for (const io::CheckpointEntry& e : good.entries())
    if (e.name == "optim.1.exp_avg") misshapen.add(e.name, e.dtype, {2, 16}, e.bytes.data(), e.bytes.size());
    else misshapen.add(e.name, e.dtype, e.shape, e.bytes.data(), e.bytes.size());
  io::save_checkpoint(path, misshapen);
  const std::string msg = load_error(path);
  INFO(msg);
  CHECK(msg.find(path + ": the optimizer state does not fit: ") == 0);
  CHECK(msg.find("1.exp_avg") != std::string::npos);
  CHECK(msg.find("(2, 16)") != std::string::npos);
  CHECK(msg.find("(32)") != std::string::npos);
}

TEST_CASE("a checkpoint load refuses NaN or inf in weights and optimizer state, and absurd counters") {
  const ScratchDir scratch;
  const data::ImageDataset ds = synthetic(48);
  DataLoader loader(ds, {16, true, false, 5});
  const io::Checkpoint good = trained_checkpoint(ds, loader);
  const std::string path = scratch.path("absurd.ckpt");
  auto refused = [&](const io::Checkpoint& c) {
    io::save_checkpoint(path, c);
    return load_error(path);
  };
  CHECK(refused(good).empty());

  CHECK(refused(edited(good, "model.fc2.weight", [](auto& b) { put_float(b, 17, std::nanf("")); })) ==
        path + ": entry 'model.fc2.weight' holds NaN at element 17 (saved from a run that diverged?)");
  CHECK(refused(edited(good, "optim.3.exp_avg_sq", [](auto& b) { put_float(b, 2, -INFINITY); })) ==
        path + ": entry 'optim.3.exp_avg_sq' holds -inf at element 2 (saved from a run that diverged?)");

  for (const char* key : {"step", "epoch", "batch_in_epoch"}) {
    CAPTURE(key);
    CHECK(refused(edited(good, "", [](auto&) {}, [&](auto& m) { m["train"][key] = -1; })) ==
          path + ": train." + key + " is -1; it counts, so it must be >= 0");
  }
  CHECK(refused(edited(good, "", [](auto&) {}, [](auto& m) { m["train"]["step"] = 2.5; })) ==
        path + ": train.step is missing or not an integer");
  CHECK(refused(edited(good, "", [](auto&) {}, [](auto& m) { m["train"]["generators"]["init"] = "12x"; })) ==
        path + ": generator 'init' has state \"12x\", expected the decimal string of a 64-bit integer");
  CHECK(refused(edited(good, "", [](auto&) {}, [](auto& m) { m["train"]["loader"]["position"] = -16; })) ==
        path + ": train.loader.position is -16; it must be an integer >= 0");
  CHECK(refused(edited(good, "", [](auto&) {}, [](auto& m) { m["optimizer"]["steps"] = -3; })) ==
        path + ": optimizer.steps is -3; it counts, so it must be >= 0");
  CHECK(refused(edited(good, "", [](auto&) {}, [](auto& m) { m["optimizer"]["lr"] = nullptr; })) ==
        path + ": optimizer.lr is null; a learning rate is a finite number >= 0");
  CHECK(refused(edited(good, "", [](auto&) {}, [](auto& m) { m.erase("train"); })) ==
        path + ": meta.train is missing or not a JSON object");

  // With the loader given, its state is checked against the dataset (another size, or past
  // the end), and a refused load leaves model, optimizer and loader as they were.
  io::save_checkpoint(path, good);
  const data::ImageDataset smaller = synthetic(32);
  DataLoader other(smaller, {16, true, false, 5});
  Setup s("mlp_adamw", 7);
  const auto before = s.model->state()[0].tensor.to_vector();
  CHECK_THROWS_WITH_AS(train::load_training_checkpoint(path, *s.model, s.opt.get(), &other),
                       (path + ": loader state: saved for a dataset of 48 images, this one has 32 (another "
                               "--limit-train or dataset?)").c_str(),
                       std::runtime_error);
  CHECK(s.model->state()[0].tensor.to_vector() == before);
  CHECK(s.opt->steps_taken() == 0);
  CHECK(other.position() == 0);
  DataLoader same(ds, {16, true, false, 999});
  const train::TrainingState st = train::load_training_checkpoint(path, *s.model, s.opt.get(), &same);
  CHECK(same.state_json() == st.loader);  // restored along with the rest
  CHECK(s.opt->steps_taken() == 3);
}

TEST_CASE("a checkpoint with NaN weights is never saved, the previous file stays") {
  const ScratchDir scratch;
  const data::ImageDataset ds = synthetic(48);
  DataLoader loader(ds, {16, true, false, 5});
  Setup a("mlp_adamw", 1);
  run_steps(a, loader, 2);
  const std::string path = scratch.path("nan_save.ckpt");
  train::save_training_checkpoint(path, *a.model, a.opt.get(), {});
  std::ifstream in(path, std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  auto save_error = [&]() -> std::string {
    try {
      train::save_training_checkpoint(path, *a.model, a.opt.get(), {});
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  };
  a.model->state()[2].tensor.data<float>()[5] = std::nanf("");  // fc2.weight
  CHECK(save_error() == path + ": refusing to save a checkpoint: parameter 'fc2.weight' holds NaN at element 5 "
                               "(the run diverged; nothing of it is worth resuming) (the previous checkpoint, "
                               "if any, is unchanged)");
  a.model->state()[2].tensor.data<float>()[5] = 0.0f;
  a.opt->set_lr(std::nan(""));  // JSON would write null
  CHECK(save_error() == path + ": refusing to save a checkpoint: optimizer.lr is nan (the previous checkpoint, "
                               "if any, is unchanged)");
  std::ifstream again(path, std::ios::binary);
  const std::string after((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  CHECK(after == before);  // byte for byte
}

TEST_CASE("a folder or a FIFO given as the checkpoint is refused at once, naming it") {
  const ScratchDir scratch;
  const std::string folder = scratch.path("folder.ckpt"), fifo = scratch.path("fifo.ckpt");
  fs::create_directories(folder);
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  for (const std::string& p : {folder, fifo}) {
    // In a child with an alarm: opening a FIFO the ordinary way would wait forever.
    const ChildResult r = run_limited([&] { io::load_checkpoint(p); }, size_t(100) << 20, 10);
    INFO(p << ": " << outcome_name(r.outcome) << ": " << r.message);
    CHECK(r.outcome == ChildResult::Refused);
    CHECK(r.message.find("checkpoint " + p + " is a ") == 0);
  }
  fs::remove(fifo);
}
