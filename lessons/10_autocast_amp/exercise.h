#pragma once
// Chapter 10 exercise: autocast for ops the policy table does not list yet.
//
// Five new ops are about to get autocast (check.cpp runs them). For each, the op's entry
// will call your two functions and then compute in whatever dtypes its inputs have:
//
//   attention_scores(q, k)  q·kᵀ / √d: a matrix product            q (T, d), k (T, d) -> (T, T)
//   logsumexp(x)            log Σ_j exp(x[i][j]), per row, computed as written    x (N, C) -> (N)
//   softplus(x)             log(1 + exp(x)), element-wise                         x (N, C)
//   silu(x)                 x · sigmoid(x), element-wise                          x (N, C)
//   lerp(a, b)              a + 0.25 · (b − a), element-wise, two inputs          a, b (N, C)
//
// 1. student_policy(op): decide each op's precision from the principles of the table in
//    framework/amp/policy.h (README "## Exercise" recalls them). They are not in the table:
//    there is nothing to look up.
// 2. student_autocast(policy, inputs): what an op's entry does to its inputs, by the
//    policy — the job autocast_cast and autocast_promote do for the ops in the table:
//      inside an Autocast region (hg::amp::autocast_enabled(), hg::amp::autocast_dtype()):
//        LowerPrecision  floating inputs -> the region's dtype (F16 or BF16)
//        FP32            floating inputs -> F32
//        Promote         all inputs -> the widest of their dtypes (F16 with BF16: F32)
//        None            unchanged
//      outside a region: unchanged. F64 inputs are never changed (they are for gradient
//      checks). The casts must be recorded by autograd, so gradients flow back through them.
//
// exercise.cpp is yours; `./lab check 10` grades the decisions by running the ops.
#include <vector>

#include "framework/amp/policy.h"
#include "framework/tensor/tensor.h"

enum class NewOp { AttentionScores, LogSumExp, Softplus, SiLU, Lerp };

hg::amp::CastPolicy student_policy(NewOp op);
std::vector<hg::Tensor> student_autocast(hg::amp::CastPolicy policy, std::vector<hg::Tensor> inputs);
