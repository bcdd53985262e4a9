#pragma once
// Initialisation, as PyTorch does it, so a halfgrad model starts from the same distribution
// as the PyTorch model it is compared with (the values differ: the generators differ).
//
// fan_in  = inputs per output  (Linear: in_features;  Conv2d: in_channels · kh · kw)
// fan_out = outputs per input  (Linear: out_features; Conv2d: out_channels · kh · kw)
//
// nn.Linear / nn.Conv2d default (reset_parameters):
//   weight ~ kaiming_uniform(a = √5):  bound = gain · √(3 / fan_in), gain = √(2 / (1 + a²))
//                                      = √(1/3) · √(3 / fan_in) = 1 / √fan_in
//   bias   ~ U(−1/√fan_in, 1/√fan_in)
// torchvision's ResNet re-initialises its convolutions with
//   kaiming_normal(mode = fan_out, relu):  std = √(2 / fan_out)
// and BatchNorm with gamma = 1, beta = 0.
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg::nn::init {

// U(−bound, bound), with bound = 1/√fan_in: PyTorch's default for Linear and Conv2d weights
// and biases.
Tensor default_uniform(const Shape& shape, int64_t fan_in, Generator& gen);

// N(0, 2 / fan_out): torchvision's ResNet convolutions.
Tensor kaiming_normal_fan_out(const Shape& shape, int64_t fan_out, Generator& gen);

// N(0, std²): GPT-2's initialisation (std 0.02 for every weight matrix and embedding).
Tensor normal(const Shape& shape, double std, Generator& gen);

}  // namespace hg::nn::init
