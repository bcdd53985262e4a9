#include "framework/train/checkpoint.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "framework/data/loader.h"
#include "framework/io/checkpoint_tensor.h"

namespace hg::train {

using nlohmann::json;

// ---- the training state ------------------------------------------------------------------

json TrainingState::to_json() const {
  json gens = json::object();
  // Written as strings: JSON readers may hold numbers as doubles, which lose 64-bit states.
  for (const auto& [name, s] : generators) gens[name] = std::to_string(s);
  return {{"step", step}, {"epoch", epoch}, {"batch_in_epoch", batch_in_epoch},
          {"generators", gens}, {"loader", loader}, {"extra", extra}};
}

// A counter of the training state: an integer ≥ 0 (a hand-edited -1 or 1e300 is refused).
static int64_t counter(const json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || !j[key].is_number_integer())
    throw std::runtime_error(fmt::format("{}: train.{} is missing or not an integer", where, key));
  const int64_t v = j[key].get<int64_t>();
  if (v < 0)  // (an unsigned value past 2^63 reads as negative too)
    throw std::runtime_error(fmt::format("{}: train.{} is {}; it counts, so it must be >= 0", where, key,
                                         j[key].dump()));
  return v;
}

// A generator state: the decimal string of a 64-bit integer (to_json writes it so).
static uint64_t generator_state(const std::string& name, const json& v, const std::string& where) {
  const std::string s = v.is_string() ? v.get<std::string>() : "";
  uint64_t x = 0;
  bool ok = !s.empty() && s.size() <= 20;
  for (char c : s) {
    if (c < '0' || c > '9' || __builtin_mul_overflow(x, uint64_t(10), &x) ||
        __builtin_add_overflow(x, uint64_t(c - '0'), &x))
      ok = false;
    if (!ok) break;
  }
  if (!ok)
    throw std::runtime_error(fmt::format("{}: generator '{}' has state {}, expected the decimal string "
                                         "of a 64-bit integer", where, name, v.dump()));
  return x;
}

TrainingState TrainingState::from_json(const json& j, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(where + ": meta.train is missing or not a JSON object");
  TrainingState s;
  s.step = counter(j, "step", where);
  s.epoch = counter(j, "epoch", where);
  s.batch_in_epoch = counter(j, "batch_in_epoch", where);
  if (!j.contains("generators") || !j["generators"].is_object())
    throw std::runtime_error(where + ": train.generators is missing or not a JSON object");
  for (const auto& [name, v] : j["generators"].items()) s.generators[name] = generator_state(name, v, where);
  if (j.contains("loader")) {
    s.loader = j["loader"];
    // The loader's own checks need the dataset (DataLoader::check_state_json); these do not.
    if (!s.loader.is_object()) throw std::runtime_error(where + ": train.loader is not a JSON object");
    for (const char* key : {"epoch", "position"})
      if (s.loader.contains(key) && !(s.loader[key].is_number_integer() && s.loader[key].get<int64_t>() >= 0))
        throw std::runtime_error(fmt::format("{}: train.loader.{} is {}; it must be an integer >= 0", where,
                                             key, s.loader[key].dump()));
  }
  if (j.contains("extra")) s.extra = j["extra"];
  return s;
}

// ---- saving ------------------------------------------------------------------------------

// JSON has no NaN or infinity (nlohmann writes null, which reads back as a type error):
// refuse them where they are made, naming the key.
static void check_finite_json(const json& j, const std::string& key) {
  if (j.is_number_float() && !std::isfinite(j.get<double>()))
    throw std::runtime_error(fmt::format("refusing to save a checkpoint: {} is {}", key, j.get<double>()));
  if (j.is_object())
    for (const auto& [k, v] : j.items()) check_finite_json(v, key + "." + k);
  if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) check_finite_json(j[i], fmt::format("{}[{}]", key, i));
}

static void add_finite(io::Checkpoint& ckpt, const std::string& name, const Tensor& t, const char* what,
                       const std::string& shown) {
  io::add_tensor(ckpt, name, t);
  const io::NonFinite bad = io::find_non_finite(ckpt.at(name));
  if (bad.index >= 0)
    throw std::runtime_error(fmt::format("refusing to save a checkpoint: {} '{}' holds {} at element {} "
                                         "(the run diverged; nothing of it is worth resuming)",
                                         what, shown, bad.what, bad.index));
}

io::Checkpoint make_checkpoint(const nn::Module& model, const optim::Optimizer* opt,
                               const TrainingState& state) {
  io::Checkpoint ckpt;
  json model_meta = json::array();
  for (const auto& nt : model.state()) {
    add_finite(ckpt, "model." + nt.name, nt.tensor, "parameter", nt.name);
    model_meta.push_back(nt.name);
  }
  ckpt.meta["kind"] = "halfgrad-training";
  ckpt.meta["model"] = {{"tensors", model_meta}};
  if (opt) {
    optim::OptimizerState os = opt->state_dict();
    for (const auto& nt : os.tensors) add_finite(ckpt, "optim." + nt.name, nt.tensor, "optimizer state", nt.name);
    check_finite_json(os.meta, "optimizer");
    ckpt.meta["optimizer"] = os.meta;
  }
  ckpt.meta["train"] = state.to_json();
  check_finite_json(ckpt.meta["train"], "train");
  return ckpt;
}

void save_training_checkpoint(const std::string& path, const nn::Module& model,
                              const optim::Optimizer* opt, const TrainingState& state,
                              const CheckpointExtras& extras) {
  io::Checkpoint ckpt;
  try {
    TrainingState with_scaler = state;
    if (extras.scaler) with_scaler.extra["grad_scaler"] = extras.scaler->state_dict();
    ckpt = make_checkpoint(model, opt, with_scaler);
    for (const auto& nt : extras.tensors) {
      const std::string key = extras.tensor_prefix + "." + nt.name;
      add_finite(ckpt, key, nt.tensor, "tensor", key);
    }
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {} (the previous checkpoint, if any, is unchanged)", path, e.what()));
  }
  io::save_checkpoint(path, ckpt);
}

// ---- loading -----------------------------------------------------------------------------

static std::string dtype_shape(const std::string& dtype, const std::vector<int64_t>& shape) {
  return dtype + " " + io::shape_string(shape);
}

// Every check that needs only the checkpoint and the model: names, dtypes, shapes.
static void check_model_entries(const io::Checkpoint& ckpt, const nn::Module& model, const std::string& where) {
  std::set<std::string> expected;
  for (const auto& nt : model.state()) {
    const std::string key = "model." + nt.name;
    expected.insert(key);
    if (!ckpt.has(key))
      throw std::runtime_error(fmt::format("{}: the model has '{}' but the checkpoint does not (a "
                                           "checkpoint of another model?)", where, nt.name));
    const io::CheckpointEntry& e = ckpt.at(key);
    const std::string want = io::checkpoint_dtype(nt.tensor.dtype());
    if (e.dtype != want || e.shape != nt.tensor.shape())
      throw std::runtime_error(fmt::format("{}: entry '{}' is {} in the checkpoint, the model expects {}",
                                           where, key, dtype_shape(e.dtype, e.shape),
                                           dtype_shape(want, nt.tensor.shape())));
  }
  for (const io::CheckpointEntry& e : ckpt.entries())
    if (e.name.rfind("model.", 0) == 0 && !expected.count(e.name))
      throw std::runtime_error(fmt::format("{}: entry '{}' is not a tensor of this model (a checkpoint of "
                                           "another model?)", where, e.name));
}

// The optimizer's entries "optim.<i>.<key>": a parameter that exists and the dtype the
// optimizer keeps its state in. Shapes are checked by Optimizer::load_state_dict.
static void check_optimizer_entries(const io::Checkpoint& ckpt, const optim::Optimizer& opt,
                                    const std::string& where) {
  const json& meta = ckpt.meta["optimizer"];
  if (meta.contains("steps") && !(meta["steps"].is_number_integer() && meta["steps"].get<int64_t>() >= 0))
    throw std::runtime_error(fmt::format("{}: optimizer.steps is {}; it counts, so it must be >= 0", where,
                                         meta["steps"].dump()));
  if (meta.contains("lr") && !(meta["lr"].is_number() && std::isfinite(meta["lr"].get<double>()) &&
                               meta["lr"].get<double>() >= 0))
    throw std::runtime_error(fmt::format("{}: optimizer.lr is {}; a learning rate is a finite number >= 0",
                                         where, meta["lr"].dump()));
  for (const io::CheckpointEntry& e : ckpt.entries()) {
    if (e.name.rfind("optim.", 0) != 0) continue;
    const std::string rest = e.name.substr(6);  // "<i>.<key>"
    const size_t dot = rest.find('.');
    size_t i = 0;
    bool ok = dot != std::string::npos && dot > 0 && dot <= 9;
    for (size_t k = 0; ok && k < dot; ++k) {
      ok = rest[k] >= '0' && rest[k] <= '9';
      i = i * 10 + size_t(rest[k] - '0');
    }
    if (!ok || i >= opt.params().size())
      throw std::runtime_error(fmt::format("{}: entry '{}' names no parameter of this optimizer (it has {})",
                                           where, e.name, opt.params().size()));
    const std::string want = io::checkpoint_dtype(optim::compute_dtype(opt.params()[i].dtype()));
    if (e.dtype != want)
      throw std::runtime_error(fmt::format("{}: entry '{}' is {} in the checkpoint, the optimizer keeps it "
                                           "as {}", where, e.name, dtype_shape(e.dtype, e.shape),
                                           dtype_shape(want, e.shape)));
  }
}

TrainingState restore_checkpoint(const io::Checkpoint& ckpt, nn::Module& model, optim::Optimizer* opt,
                                 DataLoader* loader) {
  const std::string where = ckpt.source.empty() ? std::string("checkpoint") : ckpt.source;
  if (ckpt.meta.value("kind", json()) != "halfgrad-training")
    throw std::runtime_error(where + ": not a halfgrad training checkpoint (meta.kind is missing)");

  // 1. Check everything first, then touch the model, the optimizer and the loader: a
  //    checkpoint that does not fit leaves all three as they were.
  check_model_entries(ckpt, model, where);
  if (opt) {
    if (!ckpt.meta.contains("optimizer") || !ckpt.meta["optimizer"].is_object())
      throw std::runtime_error(where + ": holds no optimizer state");
    check_optimizer_entries(ckpt, *opt, where);
  }
  for (const io::CheckpointEntry& e : ckpt.entries())  // weights, optimizer state, anything kept
    if (const io::NonFinite bad = io::find_non_finite(e); bad.index >= 0)
      throw std::runtime_error(fmt::format("{}: entry '{}' holds {} at element {} (saved from a run that "
                                           "diverged?)", where, e.name, bad.what, bad.index));
  TrainingState state = TrainingState::from_json(ckpt.meta.value("train", json()), where);
  if (loader) {
    try {
      loader->check_state_json(state.loader, where);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(e.what());
    }
  }

  // 2. The optimizer (its own checks of type, parameter count and shapes come first, and
  //    throw before it changes), then the model and the loader, whose checks passed above.
  if (opt) {
    optim::OptimizerState os;
    os.meta = ckpt.meta["optimizer"];
    for (const auto& e : ckpt.entries())
      if (e.name.rfind("optim.", 0) == 0) os.tensors.push_back({e.name.substr(6), io::read_tensor(ckpt, e.name)});
    try {
      opt->load_state_dict(os);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{}: the optimizer state does not fit: {}", where, e.what()));
    }
  }
  std::vector<nn::NamedTensor> model_state;
  for (const auto& nt : model.state()) model_state.push_back({nt.name, io::read_tensor(ckpt, "model." + nt.name)});
  model.load_state(model_state);
  if (loader) loader->set_state_json(state.loader, where);
  return state;
}

// The extras are checked before restore_checkpoint() touches anything: a checkpoint of
// another chapter (no master weights, no scaler state) changes nothing.
static void check_extras(const io::Checkpoint& ckpt, const CheckpointExtras& extras, const std::string& where) {
  if (extras.scaler) {
    const json& train = ckpt.meta.contains("train") ? ckpt.meta["train"] : json();
    if (!train.is_object() || !train.contains("extra") || !train["extra"].is_object() ||
        !train["extra"].contains("grad_scaler"))
      throw std::runtime_error(where + ": holds no GradScaler state (train.extra.grad_scaler); write it with "
                                       "this chapter's --checkpoint");
    amp::GradScaler probe = *extras.scaler;  // its own checks of the state, on a copy
    try {
      probe.load_state_dict(train["extra"]["grad_scaler"]);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{}: train.extra.grad_scaler: {}", where, e.what()));
    }
  }
  for (const auto& nt : extras.tensors) {
    const std::string key = extras.tensor_prefix + "." + nt.name;
    if (!ckpt.has(key))
      throw std::runtime_error(fmt::format("{}: holds no '{}'; write it with this chapter's --checkpoint",
                                           where, key));
    const io::CheckpointEntry& e = ckpt.at(key);
    const std::string want = io::checkpoint_dtype(nt.tensor.dtype());
    if (e.dtype != want || e.shape != nt.tensor.shape())
      throw std::runtime_error(fmt::format("{}: entry '{}' is {} in the checkpoint, the run expects {}", where,
                                           key, dtype_shape(e.dtype, e.shape), dtype_shape(want, nt.tensor.shape())));
  }
}

TrainingState load_training_checkpoint(const std::string& path, nn::Module& model,
                                       optim::Optimizer* opt, DataLoader* loader,
                                       const CheckpointExtras& extras) {
  const io::Checkpoint ckpt = io::load_checkpoint(path);
  check_extras(ckpt, extras, ckpt.source.empty() ? path : ckpt.source);
  TrainingState state = restore_checkpoint(ckpt, model, opt, loader);
  for (const auto& nt : extras.tensors) {
    Tensor t = nt.tensor;  // a handle: load_into copies into the same storage
    io::load_into(ckpt, extras.tensor_prefix + "." + nt.name, t);
  }
  if (extras.scaler) extras.scaler->load_state_dict(state.extra.at("grad_scaler"));
  return state;
}

// ---- what a training chapter does with them ----------------------------------------------

static std::string scaler_text(const CheckpointExtras& extras) {
  if (!extras.scaler) return "";
  return fmt::format(", scale {:g}, growth tracker {}", extras.scaler->get_scale(), extras.scaler->growth_tracker());
}

void save_epoch_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer& opt,
                           const DataLoader& loader, uint64_t init_generator_state, int64_t step,
                           int64_t epochs_done, const std::string& lesson, const nlohmann::json& flags,
                           const CheckpointExtras& extras) {
  TrainingState s;
  s.step = step;
  s.epoch = epochs_done;  // the next epoch to run
  s.loader = loader.state_json();
  s.generators["init"] = init_generator_state;
  s.extra["lesson"] = lesson;
  s.extra["flags"] = flags;
  save_training_checkpoint(path, model, &opt, s, extras);
  std::printf("checkpoint: %s (epoch %lld done%s)\n", path.c_str(), (long long)epochs_done, scaler_text(extras).c_str());
}

TrainingState resume_training(const std::string& path, nn::Module& model, optim::Optimizer& opt,
                              DataLoader& loader, const CheckpointExtras& extras) {
  if (path.empty()) return TrainingState{};
  const TrainingState state = load_training_checkpoint(path, model, &opt, &loader, extras);
  std::printf("resumed from %s: step %lld, epoch %lld, batch %lld of it%s\n", path.c_str(), (long long)state.step,
              (long long)state.epoch + 1, (long long)state.batch_in_epoch, scaler_text(extras).c_str());
  return state;
}

}  // namespace hg::train
