#pragma once
// Activation memory: the bytes the autograd graph keeps alive for the backward pass.
//
// Walks the graph that produced `loss` and adds up the storage of every tensor a node holds
// as an input, except the parameters themselves, in two parts:
//   activations   the input batch (or its F16 cast), each layer's output kept for the next
//                 layer's backward, the loss's inputs
//   weight_copies the F16/BF16 casts of F32 parameters that autocast made (and cached); they
//                 live until backward too, but their size depends on the model, not the batch
// Each storage is counted once.
//
// Under autocast the activations between matmuls are F16 (2 bytes instead of 4), which is
// where mixed precision saves memory; softmax and loss inputs stay F32.
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg::amp {

struct GraphMemory {
  int64_t activations = 0;
  int64_t weight_copies = 0;
};

GraphMemory graph_memory(const Tensor& loss);
inline int64_t activation_bytes(const Tensor& loss) { return graph_memory(loss).activations; }

}  // namespace hg::amp
