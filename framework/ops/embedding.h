#pragma once
// framework/ops/embedding.h — a table lookup: the row of a weight matrix for every token id.
//
// Legend: V vocabulary (rows of the table), C channels (the embedding width), ids of any
// shape S (a (B, T) batch of token ids in a GPT).
//
//   embedding(weight (V, C), ids (S)) -> (S..., C)      out[n, :] = weight[ids[n], :]
//
// Forward copies rows: no arithmetic, so every dtype comes out bit-exact. Backward is the
// transpose of a gather, a scatter-add: dW[v, :] = Σ over positions n with ids[n] = v of
// dout[n, :] — a token that appears twice in the batch gets both gradients. The sums run in
// F32 (F64 for F64) in the order of the positions, so they are the same bits on any number
// of threads, and are rounded once to the weight's dtype. On the GPU the same sums run in the
// same order (the positions grouped by id on the host, one thread per element of dW, no
// atomics: cuda/ops/embedding.h), so the GPU's gradient is the CPU's, bit for bit.
//
// Ids are a std::vector<int32_t> with their shape (what a text dataset yields), or, as a
// convenience, a float tensor holding integer ids (checked: integral and in [0, V)).
#include <cstdint>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg {

Tensor embedding(const Tensor& weight, const std::vector<int32_t>& ids, const Shape& ids_shape);
Tensor embedding(const Tensor& weight, const Tensor& ids);

}  // namespace hg
