#pragma once
// Embedding, a table lookup, on device buffers (the CPU side: framework/ops/embedding.cpp).
// Legend: V rows of the table (the vocabulary), C its width, n positions (B·T token ids).
//
//   forward   y[p, :] = weight[ids[p], :]                    weight (V, C), ids (n), y (n, C)
//   backward  dW[v, :] = Σ_{p : ids[p] = v} dy[p, :]          dy (n, C), dW (V, C)
//
// The forward is a copy (bit-exact in every dtype). The backward is a scatter-add: the
// transpose of a gather. Storage F32/F16/BF16; the sums are F32, rounded once.
//
// Why no atomicAdd. The obvious backward kernel, one thread per (p, c) doing
// atomicAdd(&dW32[ids[p], c], dy[p, c]) into an F32 buffer, is what PyTorch does by default:
// the additions into one row land in whatever order the threads get there, F32 addition is
// not associative, so a token that occurs many times gets a gradient whose last bits change
// from run to run (torch.use_deterministic_algorithms exists to forbid it). Here instead the
// positions are grouped by id on the host, where the ids already are — a counting pass,
// O(n + V), that keeps each id's positions in increasing order (group_positions_by_id) —
// and then one thread per (v, c) adds up its positions' dy in that order. No two threads
// write one element, no atomics, the same bits on every run; and it is the CPU's order
// (position by position), so the gradient equals the CPU's bit for bit. The price: the
// thread of a frequent id (a space in English text) does more of the work than the others.
#include "cuda/ops/dtype.h"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace hg::cuda {

// The positions of every id, grouped: id v's positions are positions[offsets[v] ..
// offsets[v + 1]), in increasing order; offsets has V + 1 entries. Ids must be in [0, V)
// (the op checks them first; here one outside throws).
//   ids {2, 0, 2, 1}, V = 4  ->  offsets {0, 1, 2, 4, 4}, positions {1, 3, 0, 2}
struct IdGroups {
  std::vector<int32_t> offsets, positions;
};

inline IdGroups group_positions_by_id(const std::vector<int32_t>& ids, int64_t V) {
  if (ids.size() > size_t(std::numeric_limits<int32_t>::max()))
    throw std::invalid_argument("embedding: more than 2^31 - 1 positions");
  IdGroups g;
  g.offsets.assign(size_t(V + 1), 0);
  for (size_t p = 0; p < ids.size(); ++p) {
    if (ids[p] < 0 || ids[p] >= V)
      throw std::invalid_argument("embedding: id " + std::to_string(ids[p]) + " at position " + std::to_string(p) +
                                  " is not in [0, " + std::to_string(V) + ")");
    ++g.offsets[size_t(ids[p]) + 1];  // count, one slot to the right ...
  }
  for (int64_t v = 0; v < V; ++v) g.offsets[size_t(v + 1)] += g.offsets[size_t(v)];  // ... then where each starts
  g.positions.resize(ids.size());
  std::vector<int32_t> next(g.offsets.begin(), g.offsets.end() - 1);  // the next free slot of each id
  for (size_t p = 0; p < ids.size(); ++p) g.positions[size_t(next[size_t(ids[p])]++)] = int32_t(p);
  return g;
}

// y (n, C) = the rows ids[p] of weight (V, C); ids: n device int32 in [0, V).
void launch_embedding_forward(DType dt, const void* weight, const int32_t* ids, int64_t n, int64_t C, void* y);
// dw (V, C) = Σ of dy's rows by id (every row written: 0 for an id with no position);
// offsets (V + 1) and positions (n) on the device, as group_positions_by_id made them.
void launch_embedding_backward(DType dt, const void* dy, const int32_t* offsets, const int32_t* positions, int64_t V,
                               int64_t C, void* dw);

}  // namespace hg::cuda
