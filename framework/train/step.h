#pragma once
// The two things every training program does with a batch, written once:
//
//   train_step: zero the gradients, forward, cross-entropy loss, backward, optimizer step
//   predict:    the model's class for every image of a dataset (eval mode, no graph), with
//               the images fed as the chapter's model takes them (PredictOptions)
//
// The epoch loop itself (shuffling, progress bar, logging, checkpoints) stays in each
// chapter's main.cpp, where the reader can see it.
#include <cstdint>
#include <vector>

#include "datasets/image_dataset.h"
#include "framework/nn/module.h"
#include "framework/optim/optimizer.h"
#include "framework/tensor/tensor.h"

namespace hg::train {

struct StepResult {
  double loss = 0;      // the batch's mean cross-entropy
  int64_t correct = 0;  // how many of the batch the model got right (before the update)
};

// images (B, C, H, W), labels (B). The model must be in train() mode.
StepResult train_step(nn::Module& model, optim::Optimizer& opt, const Tensor& images,
                      const std::vector<int32_t>& labels);

// argmax of each row of logits (N, K), as class ids.
std::vector<int32_t> argmax_classes(const Tensor& logits);

// How the images reach the model at evaluation, as they did in training:
//   an all-F16 model (chapters 06–09)       input_dtype F16: the images rounded to F16
//   an F32 model under autocast (10–11)     autocast on: F32 images, ops in autocast_dtype
//   chapter 11's --input-scale K            the images times K (inside the region)
struct PredictOptions {
  DType input_dtype = DType::F32;
  bool autocast = false;
  DType autocast_dtype = DType::F16;
  double input_scale = 1.0;
  Device device = Device::CPU;
  int64_t batch_size = 1000;
};

// Runs the model over the whole dataset in eval mode, batch by batch, without recording a
// graph; restores train/eval as it was. Returns one predicted class per image.
std::vector<int32_t> predict(nn::Module& model, const data::ImageDataset& ds, const PredictOptions& how);
// The F32 case: F32 images, no autocast.
std::vector<int32_t> predict(nn::Module& model, const data::ImageDataset& ds, int64_t batch_size = 1000,
                             Device device = Device::CPU);

}  // namespace hg::train
