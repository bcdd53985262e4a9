#pragma once
// framework/dist/zero.h — ZeRO stage 1: each rank keeps 1/N of the optimizer state.
//
// Plain data parallelism keeps N copies of everything. For mixed-precision Adam that is, per
// parameter, 2 bytes of F16 weights, 2 of F16 gradients and 12 of optimizer state (an F32
// master copy of the weight, Adam's m and v): 16Ψ bytes on every rank, of which the 12Ψ of
// state are only ever used by the update. ZeRO-1 (Rajbhandari et al., 2020) gives each rank
// the state of one N-th of the parameters, and only that rank updates them:
//
//   1. reduce_scatter(avg) of the gradients   rank k receives the average of its shard only
//   2. AdamW on the shard                     master weights, m and v of the shard: 12Ψ/N bytes
//   3. all_gather of the updated shards       every rank has every new weight again
//
// allreduce = reduce_scatter + all_gather, so steps 1 and 3 move the same bytes as DP's
// allreduce: the optimizer step simply moved in between. The update is elementwise, so it
// does not matter which rank computes it: the result is bit-for-bit plain DP's, as long as
// the reduce-scatter adds in the allreduce's order (both are sum-then-scale of the same N
// numbers; with 2 ranks any order gives the same bits, for more use Reduction::FixedOrder).
//
// Layout, as llm.c's multi-GPU AdamW: the parameters are seen as one flat vector of Ψ
// numbers (in the model's order), padded with zeros to N·c (c = ⌈Ψ/N⌉); rank k owns
// elements [k·c, (k+1)·c). A shard may cut a tensor in two: that does not matter to an
// elementwise update. (llm.c cuts every tensor into N shards instead; the same idea.)
//
// The shard's update is halfgrad's own AdamW, run on one tensor: the shard's F32 master
// copy, whose .grad step 1 fills. So the arithmetic is the same code as plain DP's AdamW.
// With a GradScaler, the scaler checks the shard's gradients (each rank sees only its
// shard: agree_found_inf in ddp.h makes them decide together):
//
//   zero.reduce_gradients();
//   bool stepped = scaler.step(zero.optimizer());   // or zero.optimizer().step()
//   scaler.update();
//   zero.gather_parameters();                       // unchanged weights if the step was skipped
//
// Gradient clipping needs the norm of the whole averaged gradient, of which each rank holds a
// shard: clip_grad_norm_ (after reduce_gradients and unscaling) adds the ranks' sums of
// squares in one allreduce.
//
// Memory, counted by the accountant (framework/memory/accountant.h): the master shard is
// made under a TagScope(OptimizerState), and AdamW makes m and v (F32, c elements each) as
// optimizer state at its first step. So after the first step the accountant's
// OptimizerState bytes of this rank grow by exactly 12·c = 12·⌈Ψ/N⌉ (4·c before it), the
// padding included; the shard's .grad is a Gradient, and the flat buffers of the
// collectives are temporaries.
//
// Checkpoints. state_dict() gathers the shards into the state plain AdamW over the same
// parameters would hold — per parameter "<i>.exp_avg" and "<i>.exp_avg_sq" in its shape,
// the step counts, lr — so a checkpoint of ZeRO-1 is a checkpoint of plain DP's AdamW (the
// same bits, when the two trained alike): it does not depend on N, and resumes at any number
// of ranks, with or without ZeRO. load_state_dict() takes such a state, every rank its own
// shard, and the master shard from the parameters (load the model's weights first). PyTorch's
// ZeroRedundancyOptimizer does the same (consolidate_state_dict, then state_dict on one
// rank); DeepSpeed instead writes one file per rank and converts them afterwards. F32
// parameters only: plain AdamW's state has no place for the F32 master of F16 weights.
//
// The shard is one tensor to AdamW, so it steps every element every step: a parameter without
// a gradient counts as zeros (its m and v still decay), where plain AdamW would skip it. The
// two agree bit for bit when every parameter has a gradient in every step, as in every
// training loop of this course.
#include <cstdint>
#include <memory>
#include <vector>

#include "framework/dist/communicator.h"
#include "framework/optim/adam.h"

namespace hg::dist {

// Bytes an optimizer keeps beyond the model's own tensors. Data-parallel AdamW keeps m and v
// (8Ψ; with an F16 or BF16 model also a 4Ψ F32 master copy); ZeRO-1 keeps master, m and v
// of its shard (12Ψ/N).
struct OptimizerMemory {
  int64_t master_bytes = 0;  // F32 master weights
  int64_t state_bytes = 0;   // the optimizer's state tensors (Adam: m, v)
  int64_t total() const { return master_bytes + state_bytes; }
};
// Counts the state tensors of `opt` (they exist after its first step).
OptimizerMemory optimizer_memory(const optim::Optimizer& opt, int64_t master_bytes = 0);

class ZeroAdamW {
 public:
  // Every rank passes the same parameters (a replica broadcast from rank 0, ddp.h).
  ZeroAdamW(std::vector<Tensor> params, Communicator& comm, optim::AdamOptions options);

  void zero_grad();
  void reduce_gradients();        // 1.
  optim::Optimizer& optimizer();  // 2. the shard's AdamW
  double clip_grad_norm_(double max_norm);  // between 1 and 2: the global norm (one allreduce), as amp's
  void gather_parameters();       // 3.
  void step();                    // 1, 2 and 3

  // Plain AdamW's state of the whole parameters, gathered (see above). A collective: every
  // rank calls it, and every rank gets the whole state.
  optim::OptimizerState state_dict();
  // Every rank takes its shard of a plain AdamW state of these parameters, and its master
  // shard from the parameters. Throws, changing nothing, when the state does not fit.
  void load_state_dict(const optim::OptimizerState& state);

  int64_t numel() const { return numel_; }              // Ψ
  int64_t shard_numel() const { return shard_; }        // c = ⌈Ψ/N⌉
  Range shard() const;                                  // this rank's [k·c, (k+1)·c) of the flat vector
  OptimizerMemory memory() const;                       // this rank's: 12 bytes per shard element
  const Tensor& master() const { return master_; }      // (c) F32

 private:
  void copy_params_to(Tensor& flat) const;  // the parameters, side by side, into (N·c)

  std::vector<Tensor> params_;
  Communicator& comm_;
  int64_t numel_ = 0, shard_ = 0;
  Tensor master_;                             // (c) F32: this rank's shard, requires_grad
  std::unique_ptr<optim::AdamW> optimizer_;   // over {master_}
};

}  // namespace hg::dist
