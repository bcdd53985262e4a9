#pragma once
// framework/dist/parallel_layers.h — the two other ways to split training: tensor and pipeline.
//
// Data parallelism copies the model and splits the batch. When the model itself no longer
// fits one device, it is split instead:
//
// Tensor parallelism (Megatron-LM, Shoeybi et al. 2019) splits each layer's matrices. A
// Linear y = x·Wᵀ + b, W (out, in), over N ranks:
//   column parallel: rank k holds rows block k of W (out/N output features) and of b;
//                    y_k = x·W_kᵀ + b_k (B, out/N); an all_gather puts the columns of y side
//                    by side. Every output is the same dot product as unsplit: same bits.
//   row parallel:    rank k holds columns block k of W (in/N input features) and x's
//                    matching columns x_k; y_k = x_k·W_kᵀ (B, out) is a partial sum; an
//                    allreduce(sum) adds the N partials, then + b. The dot product is cut
//                    in N pieces added in another order: equal up to rounding.
// A transformer's MLP is column then row: the activation between the two stays split, and
// one allreduce per MLP joins it. (Forward only here: the backward of each is the other's
// collective, an all_gather's backward being a reduce_scatter.)
//
// Pipeline parallelism (GPipe, Huang et al. 2019) gives each rank some consecutive layers (a
// stage) and streams m micro-batches through the p stages. Stage j can start micro-batch i
// only when stage j−1 has finished it, so the pipeline fills and drains: every stage idles
// p−1 of the m+p−1 time slots of the forward pass, and again in the backward pass. The idle
// share, the bubble, is (p−1)/(m+p−1): small only when m ≫ p.
#include <cstdint>
#include <string>
#include <vector>

#include "framework/dist/communicator.h"

namespace hg::dist {

// Rows / columns block k of N of a (R, C) F32 matrix, as a contiguous copy.
Tensor row_block(const Tensor& m, int parts, int k);
Tensor column_block(const Tensor& m, int parts, int k);

// x (B, in), w_rows (out/N, in), b_rows (out/N) on this rank -> y (B, out) on every rank.
Tensor column_parallel_linear(Communicator& comm, const Tensor& x, const Tensor& w_rows, const Tensor& b_rows);
// x_cols (B, in/N), w_cols (out, in/N) on this rank, b (out) -> y (B, out) on every rank.
Tensor row_parallel_linear(Communicator& comm, const Tensor& x_cols, const Tensor& w_cols, const Tensor& b);

// A GPipe step simulated tick by tick: every forward and every backward of one micro-batch on
// one stage takes one tick; a stage runs its forwards in order 0 .. m−1, then (after the
// last stage has done every forward: the flush) its backwards in order m−1 .. 0, each as
// soon as what it needs is done.
struct PipelineSchedule {
  int stages = 0, micro_batches = 0;
  std::vector<std::string> rows;  // per stage, two characters a tick: "F3" forward of micro-batch 3, "B3", ".." idle
  int64_t ticks = 0;              // length of the step
  int64_t busy = 0;               // stage-ticks spent computing (2·m·p)
  double bubble() const { return 1.0 - double(busy) / double(int64_t(stages) * ticks); }
};
PipelineSchedule simulate_gpipe(int stages, int micro_batches);
inline double gpipe_bubble_formula(int p, int m) { return double(p - 1) / double(m + p - 1); }

}  // namespace hg::dist
