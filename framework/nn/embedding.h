#pragma once
// Embedding: a learned table, one row of C numbers per token id.
//   ids (S) of values in [0, V)  ->  (S..., C)        weight (V, C)
// The lookup and its scatter-add gradient are the op (framework/ops/embedding.h).
// Initialised N(0, 1) as PyTorch's nn.Embedding; the GPT re-initialises its own.
#include <cstdint>
#include <vector>

#include "framework/nn/module.h"

namespace hg::nn {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen);
  // ids as a float tensor holding integer ids (the Module interface)
  Tensor forward(const Tensor& ids) override;
  // ids as a text dataset yields them, with their shape: (B, T) -> (B, T, C)
  Tensor forward(const std::vector<int32_t>& ids, const Shape& ids_shape);
  std::string describe() const override;

  Tensor weight;  // (V, C)
  const int64_t num_embeddings, embedding_dim;
};

}  // namespace hg::nn
