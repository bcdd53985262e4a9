#pragma once
// Layers with no parameters: each is one op wrapped as a Module so it can sit in a
// Sequential and print in the model's summary.
//   ReLU              (any shape)            y = max(x, 0)
//   MaxPool2d(k, s)   (N, C, H, W) -> (N, C, H/s, W/s)   max over each k×k window
//   GlobalAvgPool2d   (N, C, H, W) -> (N, C)             mean over H×W (ResNet's head)
//   Flatten           (N, ...)     -> (N, prod ...)
//   Dropout(p)        (any shape)  training: zero each element with probability p and
//                                  scale the rest by 1/(1−p); eval: identity
#include "framework/nn/module.h"

namespace hg::nn {

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "ReLU"; }
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(int64_t kernel_size, int64_t stride = -1 /* = kernel_size */);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  const int64_t kernel_size, stride;
};

class GlobalAvgPool2d : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "GlobalAvgPool2d"; }
};

class Flatten : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string describe() const override { return "Flatten"; }
};

class Dropout : public Module {
 public:
  // The generator is the caller's (seeded, saved in checkpoints): the module keeps a
  // reference, so it must outlive the module.
  Dropout(double p, Generator& gen);
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;
  const double p;

 private:
  Generator& gen_;
};

}  // namespace hg::nn
