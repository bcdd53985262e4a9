#include "framework/train/checkpoint.h"

#include <stdexcept>

#include "framework/io/checkpoint_tensor.h"

namespace hg::train {

nlohmann::json TrainingState::to_json() const {
  nlohmann::json gens = nlohmann::json::object();
  // Written as strings: JSON readers may hold numbers as doubles, which lose 64-bit states.
  for (const auto& [name, s] : generators) gens[name] = std::to_string(s);
  return {{"step", step}, {"epoch", epoch}, {"batch_in_epoch", batch_in_epoch},
          {"generators", gens}, {"loader", loader}, {"extra", extra}};
}

TrainingState TrainingState::from_json(const nlohmann::json& j) {
  TrainingState s;
  s.step = j.at("step").get<int64_t>();
  s.epoch = j.at("epoch").get<int64_t>();
  s.batch_in_epoch = j.at("batch_in_epoch").get<int64_t>();
  for (const auto& [name, v] : j.at("generators").items())
    s.generators[name] = std::stoull(v.get<std::string>());
  if (j.contains("loader")) s.loader = j.at("loader");
  if (j.contains("extra")) s.extra = j.at("extra");
  return s;
}

io::Checkpoint make_checkpoint(const nn::Module& model, const optim::Optimizer* opt,
                               const TrainingState& state) {
  io::Checkpoint ckpt;
  nlohmann::json model_meta = nlohmann::json::array();
  for (const auto& nt : model.state()) {
    io::add_tensor(ckpt, "model." + nt.name, nt.tensor);
    model_meta.push_back(nt.name);
  }
  ckpt.meta["kind"] = "halfgrad-training";
  ckpt.meta["model"] = {{"tensors", model_meta}};
  if (opt) {
    optim::OptimizerState os = opt->state_dict();
    for (const auto& nt : os.tensors) io::add_tensor(ckpt, "optim." + nt.name, nt.tensor);
    ckpt.meta["optimizer"] = os.meta;
  }
  ckpt.meta["train"] = state.to_json();
  return ckpt;
}

TrainingState restore_checkpoint(const io::Checkpoint& ckpt, nn::Module& model, optim::Optimizer* opt) {
  const std::string where = ckpt.source.empty() ? std::string("checkpoint") : ckpt.source;
  if (ckpt.meta.value("kind", std::string()) != "halfgrad-training")
    throw std::runtime_error(where + ": not a halfgrad training checkpoint (meta.kind is missing)");

  // Read everything first, then touch the model: a checkpoint that does not fit leaves the
  // model as it was.
  std::vector<nn::NamedTensor> model_state;
  for (const auto& nt : model.state()) {
    const std::string key = "model." + nt.name;
    if (!ckpt.has(key))
      throw std::runtime_error(where + ": the model has '" + nt.name +
                               "' but the checkpoint does not (a checkpoint of another model?)");
    Tensor t = io::read_tensor(ckpt, key);
    if (t.shape() != nt.tensor.shape())
      throw std::runtime_error(where + ": '" + nt.name + "' is " + shape_str(t.shape()) +
                               " in the checkpoint but " + shape_str(nt.tensor.shape()) + " in the model");
    model_state.push_back({nt.name, t});
  }
  optim::OptimizerState os;
  if (opt) {
    if (!ckpt.meta.contains("optimizer"))
      throw std::runtime_error(where + ": holds no optimizer state");
    os.meta = ckpt.meta.at("optimizer");
    for (const auto& e : ckpt.entries())
      if (e.name.rfind("optim.", 0) == 0) os.tensors.push_back({e.name.substr(6), io::read_tensor(ckpt, e.name)});
  }
  TrainingState state = TrainingState::from_json(ckpt.meta.at("train"));

  model.load_state(model_state);
  if (opt) opt->load_state_dict(os);
  return state;
}

void save_training_checkpoint(const std::string& path, const nn::Module& model,
                              const optim::Optimizer* opt, const TrainingState& state) {
  io::save_checkpoint(path, make_checkpoint(model, opt, state));
}

TrainingState load_training_checkpoint(const std::string& path, nn::Module& model,
                                       optim::Optimizer* opt) {
  return restore_checkpoint(io::load_checkpoint(path), model, opt);
}

}  // namespace hg::train
