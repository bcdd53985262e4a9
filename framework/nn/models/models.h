#pragma once
// The models by name, for command lines: "mlp", "smallcnn", "resnet18", "resnet50".
// All take (N, 1, 28, 28) images and give (N, 10) logits.
#include <string>
#include <vector>

#include "framework/nn/models/mlp.h"
#include "framework/nn/models/resnet.h"
#include "framework/nn/models/small_cnn.h"

namespace hg::nn {

const std::vector<std::string>& model_names();
// Throws std::invalid_argument listing the known names when `name` is not one of them.
ModulePtr make_model(const std::string& name, Generator& gen, int64_t in_channels = 1,
                     int64_t classes = 10, int64_t image_size = 28);

}  // namespace hg::nn
