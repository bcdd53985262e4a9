#pragma once
// Layer normalisation over the last dim, on device buffers (the CPU side, the same recipe:
// framework/ops/layer_norm.cpp). Legend: x seen as (R, C): R rows (B·T in a GPT), C features.
// x, y, dy, dx in the storage type dt (F32/F16/BF16); weight, bias, the statistics and the
// weight/bias gradients F32; all math F32.
//
// forward, per row r:
//   x0   = x[r, 0]                                   both passes work on x − x0:
//   μ'   = (1/C) Σ_c (x[r, c] − x0)                  the mean relative to x0 (μ = x0 + μ')
//   σ²   = (1/C) Σ_c ((x[r, c] − x0) − μ')²          two passes, never E[x²] − E[x]²
//   rstd = 1/√(σ² + eps)
//   x̂    = ((x − x0) − μ') · rstd                    y = weight ⊙ x̂ + bias
// Why x − x0: when |μ| ≫ σ (a residual stream that drifted) these differences are small and
// exact, so even μ's rounding error is relative to σ, not to μ. The backward recomputes x̂
// from x and the saved mean_rel = μ' and rstd (R values each, kept on the device).
//
// backward, with g = dy ⊙ weight:
//   dx      = rstd · (g − mean_c(g) − x̂ · mean_c(g ⊙ x̂))       per row
//   dweight = Σ_r dy ⊙ x̂        dbias = Σ_r dy                  per column
//
// How the work is spread: one warp per row for the forward and for dx (its 32 lanes stride
// along the C values; warp shuffles give the row's sums). dweight and dbias are sums down the
// columns: rows are cut into chunks of kLnRowChunk, one thread per (chunk, column) sums its
// chunk in row order into a partial, then one thread per column adds the partials in chunk
// order — the same bits on every run (no atomics), as the CPU's chunks of 64 rows.
#include "cuda/ops/dtype.h"

#include <cstdint>

namespace hg::cuda {

constexpr int64_t kLnRowChunk = 64;

// y (R, C); mean_rel, rstd (R) written for the backward. weight, bias (C), F32.
void launch_layer_norm_forward(DType dt, const void* x, const float* weight, const float* bias, int64_t R, int64_t C,
                               float eps, void* y, float* mean_rel, float* rstd);
// dx (R, C, type dt), dweight and dbias (C, F32); any of the three may be nullptr (not wanted).
void launch_layer_norm_backward(DType dt, const void* x, const void* dy, const float* weight, const float* mean_rel,
                                const float* rstd, int64_t R, int64_t C, void* dx, float* dweight, float* dbias);

}  // namespace hg::cuda
