#pragma once
// Activation memory: the bytes the autograd graph keeps alive for the backward pass.
//
// Walks the graph that produced `loss` and adds up the storage of every tensor a node holds
// as an input, except the parameters: the input batch (or its F16 cast), each layer's
// output kept for the next layer's backward, F16 copies of the weights under autocast.
// Each storage is counted once.
//
// Under autocast the activations between matmuls are F16 (2 bytes instead of 4), which is
// where mixed precision saves memory; softmax and loss inputs stay F32.
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg::amp {

int64_t activation_bytes(const Tensor& loss);

}  // namespace hg::amp
