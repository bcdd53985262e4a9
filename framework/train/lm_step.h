#pragma once
// One optimizer step of a language model, with gradient accumulation:
//
//   K micro-batches of B/K sequences each give the gradients of one batch of B sequences.
//
//   LmStep s = lm_step(model, opt, scaler, batch, K, low, clip);   // all of the below:
//
//   opt.zero_grad();                                   // once per step
//   double loss = accumulate_gradients(model, scaler, micro, low);   // K forwards and backwards
//   scaler.unscale_(opt);                              // unscale, clip, step, update
//   hg::amp::clip_grad_norm_(opt.params(), clip);
//   scaler.step(opt);  scaler.update();                // one check, one step, one update
//
// Why it is the same gradient: the loss of the whole batch is the mean over its B·T tokens,
//   L = (1/(B·T)) Σ ℓ_i = (1/K) Σ_k L_k,   L_k the mean over micro-batch k's (B/K)·T tokens,
// and the gradient is linear, so ∇L = Σ_k ∇(L_k / K). Each micro-batch's backward adds its
// ∇(L_k / K) into .grad (autograd accumulates across backward calls). Only the order of the
// additions differs from the big batch: the weight gradients of one batch are one GEMM over
// B·T rows; here they are K GEMMs over B·T/K rows, then K − 1 additions into .grad. In F64
// the two agree to ~1e-15; in F32 to a few units of F32's rounding (tests/unit/test_lm_step.cpp).
//
// Under a GradScaler each micro-batch's backward starts from S · L_k / K: every gradient is
// S times the true one, and the K contributions add up scaled. The check for inf/NaN, the
// unscaling and the scale update happen once per optimizer step, after the last micro-batch
// (an overflow in any micro-batch skips the whole step). A power-of-two S and K leave the
// unscaled sum equal, bit for bit, to the sum without a scaler.
//
// Memory is the point: only one micro-batch's activations live at a time, so a batch K
// times larger fits in the memory of a K-th of it — for K times the passes.
#include <cstdint>
#include <vector>

#include "datasets/text.h"
#include "framework/amp/grad_scaler.h"
#include "framework/nn/models/gpt.h"
#include "framework/optim/optimizer.h"

namespace hg::train {

// Splits a batch of B sequences into K micro-batches of B/K consecutive sequences (rows
// [k·B/K, (k+1)·B/K)), so the K micro-batches of a step are exactly its batch. Throws
// std::invalid_argument when K < 1 or K does not divide B.
std::vector<data::TokenBatch> split_batch(const data::TokenBatch& batch, int64_t K);

// Forward and backward of every micro-batch in turn, each loss divided by the number of
// micro-batches and scaled by `scaler` (a disabled scaler scales by 1). `autocast` is F16 or
// BF16 for an autocast region around each forward, or F32 for none. Adds into the .grad of
// the model's parameters (call opt.zero_grad() before the first micro-batch of a step);
// returns the batch's mean loss (the mean of the micro-batch losses, unscaled). The
// micro-batches must all have the same size. An allocation that fails in a forward or
// backward pass is std::runtime_error saying the bytes the model and a micro-batch need
// (nn::gpt_memory_needs), not a bare std::bad_alloc.
double accumulate_gradients(nn::GPT& model, const amp::GradScaler& scaler,
                            const std::vector<data::TokenBatch>& micro, DType autocast);

// The whole step, as chapters 12 and 14 take it (chapter 13's ranks take theirs in its dp_step):
struct LmStep {
  double loss = 0;       // the batch's mean loss (unscaled)
  double grad_norm = 0;  // the global gradient norm before clipping (0 when not clipping)
  float scale = 1;       // the loss scale the step used (1: no scaler)
  bool stepped = true;   // false: the scaler found inf/NaN and skipped the step
};

// One optimizer step: zero the gradients, the batch's forward and backward as K micro-batches
// (accumulate_gradients, above), then once per batch: unscale, clip the global gradient
// norm to `grad_clip` (0: no clipping; clipping must see the true gradients), step and
// update the scaler (a disabled scaler steps plainly). `autocast`: F16, BF16, or F32 (none).
LmStep lm_step(nn::GPT& model, optim::Optimizer& opt, amp::GradScaler& scaler, const data::TokenBatch& batch,
               int64_t K, DType autocast, double grad_clip);

}  // namespace hg::train
