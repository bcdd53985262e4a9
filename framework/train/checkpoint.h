#pragma once
// Training checkpoints: everything a run needs to continue exactly where it stopped.
//
//   entries  "model.<parameter or buffer name>"    e.g. "model.layer1.0.bn1.running_mean"
//            "optim.<parameter index>.<state>"     e.g. "optim.3.momentum_buffer"
//   meta     {"kind": "halfgrad-training", "model": {...}, "optimizer": {type, lr, steps, hyper},
//             "train": {step, epoch, batch_in_epoch, generators: {name: state}, ...}}
//
// The container (versioned header, CRC, atomic write) is framework/io/checkpoint.h, the
// tensor bridge framework/io/checkpoint_tensor.h; this file only decides what goes in. Bit-exact resume needs all of it: the parameters, the
// BatchNorm running statistics, the optimizer's buffers and step count, every random
// generator's state (initialisation is done, but dropout and shuffling still draw), and
// where in the epoch the data loader was.
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "framework/io/checkpoint.h"
#include "framework/nn/module.h"
#include "framework/optim/optimizer.h"

namespace hg::train {

// Where training stands, apart from the tensors.
struct TrainingState {
  int64_t step = 0;            // optimizer steps done
  int64_t epoch = 0;           // the epoch being run (0-based)
  int64_t batch_in_epoch = 0;  // batches of that epoch already done
  std::map<std::string, uint64_t> generators;  // name -> Generator::state()
  nlohmann::json loader = nlohmann::json::object();  // DataLoader::state_json(): seed, epoch, position
  nlohmann::json extra = nlohmann::json::object();  // anything else the program keeps

  nlohmann::json to_json() const;
  static TrainingState from_json(const nlohmann::json& j);
};

// Builds the container. `opt` may be null (a model-only checkpoint, e.g. for evaluation).
io::Checkpoint make_checkpoint(const nn::Module& model, const optim::Optimizer* opt,
                               const TrainingState& state);
// Puts the model's tensors (values copied in place), the optimizer's state and returns the
// training state. Throws with the reason (and the file) when a name, shape or dtype does
// not fit the model or optimizer given.
TrainingState restore_checkpoint(const io::Checkpoint& ckpt, nn::Module& model, optim::Optimizer* opt);

// The two together with the file: save is atomic (a failed save leaves the previous
// checkpoint intact), load checks version and CRC before anything is touched.
void save_training_checkpoint(const std::string& path, const nn::Module& model,
                              const optim::Optimizer* opt, const TrainingState& state);
TrainingState load_training_checkpoint(const std::string& path, nn::Module& model,
                                       optim::Optimizer* opt);

}  // namespace hg::train
