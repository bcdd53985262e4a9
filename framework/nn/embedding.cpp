#include "framework/nn/embedding.h"

#include "framework/ops/ops.h"

namespace hg::nn {

Embedding::Embedding(int64_t V, int64_t C, Generator& gen) : num_embeddings(V), embedding_dim(C) {
  weight = Tensor::randn({V, C}, gen);
  register_parameter("weight", &weight);
}

Tensor Embedding::forward(const Tensor& ids) { return embedding(weight, ids); }

Tensor Embedding::forward(const std::vector<int32_t>& ids, const Shape& ids_shape) {
  return embedding(weight, ids, ids_shape);
}

std::string Embedding::describe() const {
  return "Embedding(" + std::to_string(num_embeddings) + " ids -> " + std::to_string(embedding_dim) + ")";
}

}  // namespace hg::nn
