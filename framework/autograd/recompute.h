#pragma once
// framework/autograd/recompute.h — activation recomputation: trade compute for memory.
//
// (PyTorch calls it activation checkpointing, torch.utils.checkpoint; halfgrad keeps
// "checkpoint" for a training state saved to a file, framework/train/checkpoint.h.)
//
// Normally every op of a block records a node that keeps its inputs until backward: a
// transformer layer keeps ~34·s·b·h bytes (framework/memory/formulas.h). recompute() runs
// the block without recording anything and keeps only the block's inputs; backward runs the
// block again, this time recording, and backpropagates through that fresh graph at once:
//
//   forward:   y = fn(inputs)                        under NoGradGuard: nothing saved inside
//   backward:  x' = inputs, detached (leaves)         a little graph of its own
//              y' = fn(x')                            recorded, in the forward's autocast state
//              backward(y', dy)                       parameters inside fn get their .grad
//              return x'.grad                         dL/d(inputs), for the outer graph
//
//   Tensor h = hg::recompute([&](const std::vector<hg::Tensor>& in) { return block(in[0]); }, {x});
//
// Cost: one more forward of fn per backward (about a third more compute for a whole model).
// Gain: the activations inside fn live only during its own backward, one block at a time.
// The gradients are the same bits as without recomputation: the recomputation does the same
// arithmetic in the same order.
//
// fn must compute the same thing both times. Dropout inside fn draws its masks from a
// Generator: pass it as `rng`, and recompute() saves its state before the forward, rewinds it
// for the recomputation (so the same masks are drawn again) and puts it back after, as
// PyTorch's preserve_rng_state does (the generator must live until backward, as the model
// does). No other state may change in the forward (batch norm's running statistics would be
// updated twice). Single output. Under NoGradGuard (evaluation) it simply returns fn(inputs).
#include <functional>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg {

using RecomputeFn = std::function<Tensor(const std::vector<Tensor>& inputs)>;

Tensor recompute(const RecomputeFn& fn, const std::vector<Tensor>& inputs, Generator* rng = nullptr);

}  // namespace hg
