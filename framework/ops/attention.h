#pragma once
// framework/ops/attention.h — the causal mask of self-attention.
//
// Legend: B batch, H heads, T positions (query i, key j), D head width.
//
// A language model predicts token i+1 from tokens 0..i, so position i may attend only to
// keys j ≤ i. The scores S = q·kᵀ (B, H, T, T) get −inf above the diagonal, and a softmax
// over each row then gives those keys weight e^−inf = 0:
//
//   causal_mask(S)[i, j]  = S[i, j]  if j ≤ i,  −inf  if j > i
//   causal_softmax(S, s)  = softmax(causal_mask(s · S)) along the last dim      (s = 1/√D)
//
//   row i:  m = max_{j≤i} s·S[i, j]     P[i, j] = e^(s·S[i, j] − m) / Σ_{k≤i} e^(s·S[i, k] − m)
//
// causal_softmax is the fused form the GPT uses: it never writes the −inf, skips the masked
// keys, and folds in the 1/√D scale. causal_mask is the literal step, for showing (and
// testing) that the two agree. Both take (..., T, T): the last two dims are queries × keys.
//
// Dtypes: causal_softmax computes in F32 (F64 for F64) and rounds once to x's dtype; under
// autocast it runs in F32 (exponentials and a sum, like softmax). causal_mask only copies.
// On the GPU both run in kernels (cuda/ops/attention.h), one warp per row for the softmax.
#include "framework/tensor/tensor.h"

namespace hg {

Tensor causal_mask(const Tensor& scores);
Tensor causal_softmax(const Tensor& scores, double scale = 1.0);

}  // namespace hg
