#pragma once
// framework/memory/formulas.h — what the literature predicts for training memory, to set
// beside what the accountant (accountant.h) measures.
//
// 1. Model states, bytes per parameter (Rajbhandari et al., "ZeRO", 2020, section 3.1):
//
//                          parameters  gradients  optimizer state           total
//    SGD            FP32        4          4       0                          8
//    SGD+momentum   FP32        4          4       4 (momentum)              12
//    Adam           FP32        4          4       8 (m, v)                  16
//    SGD            mixed       2          2       4 (FP32 master)            8
//    SGD+momentum   mixed       2          2       8 (master, momentum)      12
//    Adam           mixed       2          2      12 (master, m, v)          16
//
//    "mixed": FP16 parameters and gradients, an FP32 master copy that the optimizer
//    updates (framework/amp/master_weights.h). The paper calls the optimizer's bytes K
//    (K = 12 for mixed-precision Adam).
//
// 2. Activations of one transformer layer, bytes (Korthikanti et al., "Reducing Activation
//    Recomputation in Large Transformer Models", 2022, equation 1):
//
//        s·b·h·(34 + 5·a·s/h)      s sequence, b micro-batch, h hidden size, a heads
//
//    16-bit activations, the attention matrix stored (a·s² per sample: the 5as/h term), the
//    dropout masks in one byte each, no recomputation and no tensor parallelism.
//
// 3. ZeRO, model-state bytes per data-parallel rank for N ranks and mixed-precision Adam
//    (the paper's figure 1):
//
//        baseline (plain data parallel)   (2 + 2 + K)·Ψ
//        stage 1, P_os                    2Ψ + 2Ψ + K·Ψ/N
//        stage 2, P_os+g                  2Ψ + (2 + K)·Ψ/N
//        stage 3, P_os+g+p                (2 + 2 + K)·Ψ/N
//
//    Ψ = 7.5e9, N = 64 gives 120 / 31.4 / 16.6 / 1.9 GB (GB = 10^9 bytes, as the paper).
//    No stage partitions activations: each rank keeps those of its own micro-batch.
#include <cstdint>
#include <string>
#include <vector>

namespace hg::memory {

enum class OptimizerKind { SGD, SGDMomentum, Adam };
enum class Precision { FP32, Mixed };

struct BytesPerParam {
  int parameters = 0, gradients = 0, optimizer_state = 0;
  int total() const { return parameters + gradients + optimizer_state; }
};
BytesPerParam bytes_per_param(OptimizerKind optimizer, Precision precision);

// s·b·h·(34 + 5·a·s/h) bytes: one layer's activations. Throws std::invalid_argument when a
// size is not positive or h is not a multiple of a.
double activation_bytes_per_layer(int64_t seq, int64_t batch, int64_t hidden, int64_t heads);

struct ZeroRow {
  std::string stage;    // "baseline", "stage 1 (P_os)", ...
  std::string formula;  // "(2+2+K)Ψ", ...
  double bytes = 0;     // model states per rank
};
// The four rows of the ZeRO table; K = 12 (mixed-precision Adam) unless given.
std::vector<ZeroRow> zero_table(double params, int64_t ranks, double k = 12);

// What `./lab lesson 12 --plan` prints. layers..batch are all 0 (model states only) or all
// positive (the activation term is added to every row).
// The largest Ψ the plan takes: a million times a trillion-parameter model, and far below
// the 1.1e307 at which 16·Ψ bytes would pass a double's range and print as "inf GB". With
// every other size up to 2^63-1 each row stays finite (at most ~3e95 bytes).
inline constexpr double kMaxPlanParams = 1e18;
struct PlanConfig {
  double params = 0;   // Ψ, --params
  int64_t ranks = 1;   // N, --ranks
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0, batch = 0;  // --layers --hidden --heads --seq --batch
};
// Throws std::invalid_argument naming the flag when a value is out of range (a caller on
// the command line prints it and exits 2).
std::string plan_table(const PlanConfig& config);

}  // namespace hg::memory
