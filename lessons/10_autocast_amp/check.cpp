// Grades the chapter 10 exercise (student_policy and student_autocast in exercise.cpp).
//
// The five new ops are written here. Each calls the learner's student_autocast with the
// learner's student_policy at entry, then computes with autocast turned off inside (as an
// op's kernel would: in the dtypes its inputs now have). A decision is graded by running the
// op in F16 and BF16 regions on inputs chosen to show the consequence — logsumexp of values
// near 15 is inf in F16; a matrix product left in F32 gets no tensor cores — and explained
// from the principle it broke. The mechanics are graded against autocast_cast and
// autocast_promote, halfgrad's own entry casts, on real tensors in real regions. The tensors'
// values are drawn from this grading's seed.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "framework/amp/autocast.h"
#include "framework/ops/ops.h"
#include "lessons/10_autocast_amp/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;
using hg::DType;
using hg::Tensor;
using hg::amp::CastPolicy;

namespace {

const char* op_name(NewOp op) {
  switch (op) {
    case NewOp::AttentionScores: return "attention_scores";
    case NewOp::LogSumExp: return "logsumexp";
    case NewOp::Softplus: return "softplus";
    case NewOp::SiLU: return "silu";
    case NewOp::Lerp: return "lerp";
  }
  return "?";
}

// The op: the learner's entry casts (in a child, inside the caller's Autocast region: the
// child is a copy of this thread), then the math here in whatever dtypes arrived.
Tensor run_op(grader::Grader& g, NewOp op, std::vector<Tensor> in) {
  std::vector<Tensor> x = g.run([&] { return student_autocast(student_policy(op), in); });
  if (x.size() != in.size()) return Tensor();
  for (const Tensor& t : x)
    if (!t.defined()) return Tensor();
  hg::amp::Autocast off(DType::F16, /*enabled=*/false);
  switch (op) {
    case NewOp::AttentionScores:
      return hg::mul(hg::matmul(x[0], x[1], false, true), 1.0 / std::sqrt(double(x[0].size(1))));
    case NewOp::LogSumExp: return hg::log(hg::sum(hg::exp(x[0]), 1));
    case NewOp::Softplus: return hg::log(hg::add(hg::exp(x[0]), 1.0));
    case NewOp::SiLU: return hg::mul(x[0], hg::sigmoid(x[0]));
    case NewOp::Lerp: return hg::add(x[0], hg::mul(hg::sub(x[1], x[0]), 0.25));
  }
  return Tensor();
}

Tensor uniform(hg::Shape shape, double lo, double hi, DType dtype, uint64_t seed) {
  hg::Generator gen(seed);
  return Tensor::uniform(shape, lo, hi, gen).to(dtype);
}

CastPolicy learner_policy(grader::Grader& g, NewOp op) {
  const CastPolicy p = g.run([&] { return student_policy(op); });
  if (int(p) < int(CastPolicy::LowerPrecision) || int(p) > int(CastPolicy::None))
    throw grader::Failed(format("student_policy(%s) returned %d, which is none of the four policies", op_name(op),
                                int(p)));
  return p;
}

std::string policy_said(grader::Grader& g, NewOp op) {
  return format("You decided %s for %s. ", hg::amp::to_string(learner_policy(g, op)), op_name(op));
}

// A tensor the learner's casts did not return (one input in, none out) stands for no answer.
std::string no_tensor(NewOp op) {
  return format("student_autocast for %s did not return one tensor per input.", op_name(op));
}

// The decision for attention_scores: the output dtype is the region's.
std::string attention(grader::Grader& g) {
  for (DType region : {DType::F16, DType::BF16}) {
    Tensor q = uniform({8, 16}, -1, 1, DType::F32, g.seed_for(1)), k = uniform({8, 16}, -1, 1, DType::F32, g.seed_for(2));
    hg::amp::Autocast ac(region);
    const Tensor s = run_op(g, NewOp::AttentionScores, {q, k});
    if (!s.defined()) return no_tensor(NewOp::AttentionScores);
    if (s.dtype() != region)
      return format("In a %s region, attention_scores of F32 q and k computed in %s.\n", hg::dtype_name(region),
                    hg::dtype_name(s.dtype())) + policy_said(g, NewOp::AttentionScores) +
             "It is a matrix product: the op tensor cores exist for, and they take F16 or BF16 operands "
             "(accumulating in F32 inside the product, so the sum keeps its bits). Left in F32 it runs at a "
             "fraction of that speed, which is what autocast is for. " + see("## Exercise");
  }
  return "";
}

// logsumexp / softplus on F16 inputs near 15 in an F16 region: F32 is needed for range.
std::string range_op(grader::Grader& g, NewOp op, double lo, double hi) {
  hg::amp::Autocast ac(DType::F16);
  const Tensor x = uniform({4, 64}, lo, hi, DType::F16, g.seed_for(3));
  const Tensor op_out = run_op(g, op, {x});
  if (!op_out.defined()) return no_tensor(op);
  const Tensor y = op_out.to(DType::F32);
  const std::vector<double> xv = x.to_double_vector(), yv = y.to_double_vector();
  for (size_t r = 0; r < yv.size(); ++r) {
    double want = 0;
    if (op == NewOp::LogSumExp) {
      for (int c = 0; c < 64; ++c) want += std::exp(xv[r * 64 + c]);
      want = std::log(want);
    } else {
      want = std::log1p(std::exp(xv[r]));
    }
    if (!(std::fabs(yv[r] - want) <= 1e-3 * std::fabs(want)))
      return format("In an F16 region, %s of F16 inputs between %g and %g gave %.6g at element %zu; the true "
                    "value is %.6g.\n", op_name(op), lo, hi, yv[r], r, want) + policy_said(g, op) +
             "exp(x) is larger than 65504, F16's largest finite value, for every x above 11.09: in F16 it is "
             "inf, and so is the result. The table's rule for exp, log, pow and long sums (softmax, the "
             "losses, norms) is F32: the range, and the bits a sum of many terms needs." +
             (learner_policy(g, op) == CastPolicy::Promote ? " (Promote casts only to the widest of the inputs "
                                                          "given: with one F16 input nothing changes.)"
                                                        : "");
  }
  return "";
}

std::string silu(grader::Grader& g) {
  for (DType in : {DType::F16, DType::F32, DType::BF16}) {
    hg::amp::Autocast ac(DType::F16);
    const Tensor y = run_op(g, NewOp::SiLU, {uniform({4, 8}, -4, 4, in, g.seed_for(4))});
    if (!y.defined()) return no_tensor(NewOp::SiLU);
    if (y.dtype() != in) {
      std::string why = format("In an F16 region, silu of a %s input computed in %s.\n", hg::dtype_name(in),
                               hg::dtype_name(y.dtype())) + policy_said(g, NewOp::SiLU);
      if (y.dtype() == DType::F32)
        return why + "silu is element-wise on one input and bounded by |x|: it is as accurate in the dtype "
                     "that arrives as relu, gelu or sigmoid are. Casting up buys nothing and costs an F32 copy "
                     "of the activation (kept for backward) and the time of the cast: the table's None.";
      return why + "Casting an F32 input down for an element-wise op saves no tensor-core time (there is no "
                   "product to speed up) and rounds away 13 bits: the table's None keeps what arrives.";
    }
  }
  return "";
}

std::string lerp(grader::Grader& g) {
  const struct { DType a, b, want; } cases[] = {{DType::F16, DType::F32, DType::F32},
                                                {DType::F16, DType::F16, DType::F16},
                                                {DType::BF16, DType::F16, DType::F32},
                                                {DType::F32, DType::F32, DType::F32}};
  for (const auto& c : cases) {
    hg::amp::Autocast ac(DType::F16);
    Tensor y;
    std::string threw;
    try {
      y = run_op(g, NewOp::Lerp, {uniform({4, 8}, -1, 1, c.a, g.seed_for(5)), uniform({4, 8}, -1, 1, c.b, g.seed_for(6))});
      if (!y.defined()) return no_tensor(NewOp::Lerp);
    } catch (const grader::Failed& e) {  // the learner's casts threw (or crashed, or did not finish)
      if (e.timed_out()) throw;
      threw = e.what();
    } catch (const std::exception& e) {  // the math on what they gave
      threw = e.what();
    }
    if (!threw.empty() || y.dtype() != c.want) {
      std::string why = format("In an F16 region, lerp of %s and %s inputs ", hg::dtype_name(c.a),
                               hg::dtype_name(c.b)) +
                        (threw.empty() ? format("computed in %s; expected %s.\n", hg::dtype_name(y.dtype()),
                                                hg::dtype_name(c.want))
                                       : "failed: " + threw + "\n") + policy_said(g, NewOp::Lerp);
      return why + "lerp combines two inputs element-wise, like add and mul: they may arrive in different "
                   "dtypes (an F16 activation and an F32 residual or weight), and the op needs one. The "
                   "table promotes: the narrower input is cast to the wider, so nothing an F32 input holds "
                   "is rounded away, and inputs that agree stay as they are.";
    }
  }
  return "";
}

// The mechanics, by policy, against halfgrad's own entry casts for ops in the table.
DType reference_dtype(CastPolicy p, const std::vector<Tensor>& in, size_t i) {
  static const char* op_of[] = {"linear", "softmax", "add", "relu"};  // one op per policy
  const char* op = op_of[int(p)];
  if (p == CastPolicy::Promote) {
    Tensor a = in[0], b = in[1];
    hg::amp::autocast_promote(a, b, op);
    return (i == 0 ? a : b).dtype();
  }
  return hg::amp::autocast_cast(in[i], op).dtype();
}

// The name of a dtype the learner's casts gave, by number (-1: no tensor).
const char* dtype_or_none(int d) {
  return d >= int(DType::F32) && d <= int(DType::F64) ? hg::dtype_name(DType(d)) : "no tensor";
}

std::string mechanics(grader::Grader& g, bool in_region, bool f64_only) {
  const CastPolicy policies[] = {CastPolicy::LowerPrecision, CastPolicy::FP32, CastPolicy::Promote,
                                 CastPolicy::None};
  const std::vector<DType> dtypes = f64_only ? std::vector<DType>{DType::F64}
                                             : std::vector<DType>{DType::F32, DType::F16, DType::BF16};
  // Every combination below, in one child, asked in an order drawn from the grading's seed:
  // the dtypes the learner's casts gave (-1 for a tensor not returned or undefined).
  using Combination = std::tuple<DType, CastPolicy, DType, DType>;  // region, policy, a, b
  std::vector<Combination> all;
  for (DType region : {DType::F16, DType::BF16})
    for (CastPolicy p : policies)
      for (DType a : dtypes)
        for (DType b : dtypes) all.emplace_back(region, p, a, b);
  const std::vector<std::vector<int>> gave = g.answers(all, in_region ? 8 : 9, [&](const Combination& c) {
    const auto& [region, p, a, b] = c;
    hg::amp::Autocast ac(region, in_region);
    std::vector<int> d;
    for (const Tensor& t : student_autocast(p, {Tensor::ones({2}, a), Tensor::ones({2}, b)}))
      d.push_back(t.defined() ? int(t.dtype()) : -1);
    return d;
  });
  std::string why;
  for (size_t next = 0; next < all.size() && why.empty(); ++next) {
    const auto& [region, p, a, b] = all[next];
    const std::vector<int>& got = gave[next];
    hg::amp::Autocast ac(region, in_region);
    const std::vector<Tensor> in = {Tensor::ones({2}, a), Tensor::ones({2}, b)};
    if (got.size() != 2) return "student_autocast must return one tensor per input.";
    for (size_t i = 0; i < 2 && why.empty(); ++i) {
      const DType want = reference_dtype(p, in, i);
      if (got[i] != int(want))
        why = format("%s, policy %s, inputs (%s, %s): input %zu became %s, expected %s.",
                     in_region ? format("In a %s region", hg::dtype_name(region)).c_str() : "Outside any region",
                     hg::amp::to_string(p), hg::dtype_name(a), hg::dtype_name(b), i, dtype_or_none(got[i]),
                     hg::dtype_name(want)) +
              (!in_region ? " Outside an Autocast region every op runs in the dtypes it is given: "
                            "the policy does nothing there."
               : a == DType::F64 ? " F64 inputs are never cast: they are there for gradient checks, "
                                   "which need every bit."
                                 : "");
    }
  }
  return why;
}

std::string gradients_flow(grader::Grader& g) {
  // All of it in the child: backward runs the graph the learner's casts built.
  const auto [out_dtype, q_grad, q_grad_dtype] = g.run([&] {
    Tensor q = uniform({3, 4}, -1, 1, DType::F32, g.seed_for(7));
    q.requires_grad_(true);
    Tensor out;
    {
      hg::amp::Autocast ac(DType::F16);
      out = student_autocast(CastPolicy::LowerPrecision, {q}).at(0);
    }
    if (out.dtype() == DType::F16 && out.requires_grad()) hg::sum(out.to(DType::F32)).backward();
    return std::make_tuple(out.dtype(), q.grad().defined(), q.grad().defined() ? q.grad().dtype() : DType::F32);
  });
  if (out_dtype != DType::F16) return "LowerPrecision in an F16 region must give an F16 tensor.";
  if (!q_grad)
    return "The F32 input got no gradient: the cast was not recorded by autograd, so backward cannot reach "
           "through it to the F32 weight. Cast with t.to(dtype) or hg::cast, which record it.";
  if (q_grad_dtype != DType::F32)
    return format("The F32 input's gradient is %s; the cast's backward returns it in the input's own dtype.",
                  dtype_or_none(int(q_grad_dtype)));
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"10", "autocast for ops the policy does not list", "10_autocast_amp", "Exercise"}, argc, argv);
  g.own_code_only({{"hg::amp::autocast_cast", "halfgrad's entry cast, which looks the op up in the table"},
                   {"hg::amp::autocast_promote", "halfgrad's entry cast for promoting ops"},
                   {"hg::amp::policy_for", "the table lookup (these ops are not in the table)"},
                   {"hg::amp::policy_table", "the table itself (these ops are not in it)"}});
  g.check("attention_scores (a matrix product) runs in the region's dtype", [&] { return attention(g); });
  g.check("logsumexp of F16 inputs between 10 and 20 is right (no overflow)",
          [&] { return range_op(g, NewOp::LogSumExp, 10, 20); });
  g.check("softplus of F16 inputs between 10 and 15 is right (no overflow)",
          [&] { return range_op(g, NewOp::Softplus, 10, 15); });
  g.check("silu keeps the dtype that arrives", [&] { return silu(g); });
  g.check("lerp of mixed inputs runs in the wider dtype; equal inputs stay", [&] { return lerp(g); });
  g.check("each policy, in F16 and BF16 regions, for F32, F16 and BF16 inputs",
          [&] { return mechanics(g, true, false); });
  g.check("F64 inputs are never cast", [&] { return mechanics(g, true, true); });
  g.check("outside a region nothing is cast", [&] { return mechanics(g, false, false); });
  g.check("the casts are recorded: the gradient reaches an F32 input, in F32", [&] { return gradients_flow(g); });
  return g.finish();
}
