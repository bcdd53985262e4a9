#pragma once
// Training checkpoints: everything a run needs to continue exactly where it stopped.
//
//   entries  "model.<parameter or buffer name>"    e.g. "model.layer1.0.bn1.running_mean"
//            "optim.<parameter index>.<state>"     e.g. "optim.3.momentum_buffer"
//            "<prefix>.<name>"                     tensors a chapter keeps beside the model,
//                                                  e.g. "master.fc1.weight" (CheckpointExtras)
//   meta     {"kind": "halfgrad-training", "model": {...}, "optimizer": {type, lr, steps, hyper},
//             "train": {step, epoch, batch_in_epoch, generators: {name: state}, ...}}
//
// The container (versioned header, CRC, atomic write) is framework/io/checkpoint.h, the
// tensor bridge framework/io/checkpoint_tensor.h; this file only decides what goes in. Bit-exact resume needs all of it: the parameters, the
// BatchNorm running statistics, the optimizer's buffers and step count, every random
// generator's state (initialisation is done, but dropout and shuffling still draw), and
// where in the epoch the data loader was.
//
// What is refused, and when (a refused load changes nothing; a refused save writes nothing,
// so the previous checkpoint stays):
//   save  a NaN or ±inf in any model tensor or optimizer state, or in a number of the
//         metadata (JSON would write it as null): a run that diverged has nothing to keep
//   load  a model tensor missing, extra, or of another dtype or shape than the model's; an
//         optimizer state for another optimizer, parameter or dtype; a NaN or ±inf in any
//         floating-point entry; a negative step, epoch or batch_in_epoch; a loader state
//         that is negative or, when a DataLoader is given, past the end of its dataset or
//         saved for a dataset of another size
// Every message starts with the file's name and names the entry, what was expected and
// what was found.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/amp/grad_scaler.h"
#include "framework/io/checkpoint.h"
#include "framework/nn/module.h"
#include "framework/optim/optimizer.h"

namespace hg {
class DataLoader;
}

namespace hg::train {

// Where training stands, apart from the tensors.
struct TrainingState {
  int64_t step = 0;            // optimizer steps done
  int64_t epoch = 0;           // the epoch being run (0-based)
  int64_t batch_in_epoch = 0;  // batches of that epoch already done
  std::map<std::string, uint64_t> generators;  // name -> Generator::state()
  nlohmann::json loader = nlohmann::json::object();  // DataLoader::state_json(): seed, epoch, position, n
  nlohmann::json extra = nlohmann::json::object();  // anything else the program keeps

  nlohmann::json to_json() const;
  // Checks types and ranges (counters ≥ 0, generator states 64-bit integers); throws
  // std::runtime_error starting with `where` (the file) when one is wrong.
  static TrainingState from_json(const nlohmann::json& j, const std::string& where = "checkpoint");
};

// Builds the container. `opt` may be null (a model-only checkpoint, e.g. for evaluation).
// Throws std::runtime_error naming the tensor (or metadata key) that is not finite.
io::Checkpoint make_checkpoint(const nn::Module& model, const optim::Optimizer* opt,
                               const TrainingState& state);
// Checks everything against the model, the optimizer and (when given) the loader, then puts
// the model's tensors (values copied in place), the optimizer's state and the loader's
// position, and returns the training state. Throws std::runtime_error (see above) before
// anything is touched when the checkpoint does not fit.
TrainingState restore_checkpoint(const io::Checkpoint& ckpt, nn::Module& model, optim::Optimizer* opt,
                                 DataLoader* loader = nullptr);

// What a chapter keeps beside the model and the optimizer, e.g. chapter 09: the F32 master
// weights (an F16 model cannot give them back: rounding lost their low bits) and the
// GradScaler (its scale and growth counter: a resumed run that started again from 2^16
// would skip steps the uninterrupted one never skipped).
struct CheckpointExtras {
  std::string tensor_prefix;              // "master": saved as "master.<name>"
  std::vector<nn::NamedTensor> tensors;   // restored in place (values copied)
  amp::GradScaler* scaler = nullptr;      // its state_dict() under train.extra.grad_scaler
};

// The two together with the file: save is atomic (a failed or refused save leaves the
// previous checkpoint intact), load checks version and CRC before anything is touched, and
// every extra before the model, the optimizer, the loader or the scaler changes.
void save_training_checkpoint(const std::string& path, const nn::Module& model,
                              const optim::Optimizer* opt, const TrainingState& state,
                              const CheckpointExtras& extras = {});
TrainingState load_training_checkpoint(const std::string& path, nn::Module& model,
                                       optim::Optimizer* opt, DataLoader* loader = nullptr,
                                       const CheckpointExtras& extras = {});

// ---- what a training chapter does with them (02, 09) -------------------------------------
// At the end of an epoch: where training stands (the step, the next epoch, the loader, the
// initialisation generator), the chapter's run.json lesson and the flags --resume checks
// (framework/train/resume.h), and the extras. Prints
//   "checkpoint: PATH (epoch N done)"   (and ", scale S, growth tracker G" with a scaler)
void save_epoch_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer& opt,
                           const DataLoader& loader, uint64_t init_generator_state, int64_t step,
                           int64_t epochs_done, const std::string& lesson, const nlohmann::json& flags,
                           const CheckpointExtras& extras = {});
// --resume PATH: all of it back, all or nothing, and one line
//   "resumed from PATH: step S, epoch E, batch B of it"   (and the scale, with a scaler)
// An empty PATH (no --resume) restores nothing and returns the state of a fresh run.
TrainingState resume_training(const std::string& path, nn::Module& model, optim::Optimizer& opt,
                              DataLoader& loader, const CheckpointExtras& extras = {});

}  // namespace hg::train
