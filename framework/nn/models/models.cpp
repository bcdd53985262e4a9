#include "framework/nn/models/models.h"

#include <stdexcept>

namespace hg::nn {

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"mlp", "smallcnn", "resnet18", "resnet50"};
  return names;
}

ModulePtr make_model(const std::string& name, Generator& gen, int64_t cin, int64_t classes,
                     int64_t size) {
  if (name == "mlp") return std::make_shared<MLP>(gen, cin * size * size, 512, 256, classes);
  if (name == "smallcnn") return std::make_shared<SmallCNN>(gen, cin, 32, 64, 128, classes, size);
  if (name == "resnet18") return resnet18(gen, cin, classes);
  if (name == "resnet50") return resnet50(gen, cin, classes);
  std::string known;
  for (const auto& n : model_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown model '" + name + "' (known: " + known + ")");
}

}  // namespace hg::nn
