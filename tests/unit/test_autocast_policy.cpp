// The autocast policy table: the ops the chapter names are where it says, and nothing is
// listed twice or silently defaulted.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "framework/amp/policy.h"

using hg::amp::CastPolicy;
using hg::amp::policy_for;

TEST_CASE("tensor-core ops run in lower precision") {
  for (const char* op : {"matmul", "linear", "conv2d"}) {
    INFO(op);
    CHECK(policy_for(op) == CastPolicy::LowerPrecision);
  }
}

TEST_CASE("range- and sum-sensitive ops run in F32") {
  for (const char* op : {"softmax", "log_softmax", "cross_entropy", "mse_loss", "sum",
                         "exp", "log", "pow", "square", "layer_norm", "norm"}) {
    INFO(op);
    CHECK(policy_for(op) == CastPolicy::FP32);
  }
}

TEST_CASE("multi-input elementwise ops promote") {
  for (const char* op : {"add", "sub", "mul", "div", "cat"}) {
    INFO(op);
    CHECK(policy_for(op) == CastPolicy::Promote);
  }
  CHECK(policy_for("relu") == CastPolicy::None);
  CHECK(policy_for("mean") == CastPolicy::None);  // as PyTorch: the input's dtype
  CHECK(policy_for("batch_norm2d") == CastPolicy::None);  // statistics in F32 inside the op
}

TEST_CASE("an unknown op name is an error that names the op and the table") {
  CHECK_THROWS_WITH_AS(policy_for("lineer"), doctest::Contains("'lineer'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(policy_for("lineer"), doctest::Contains("policy.cpp"),
                       std::invalid_argument);
}

TEST_CASE("every op appears once in the table") {
  std::set<std::string> seen;
  for (const auto& e : hg::amp::policy_table()) {
    INFO(e.op);
    CHECK(seen.insert(e.op).second);
  }
}

TEST_CASE("the ops that differ from PyTorch on purpose say what PyTorch does and why") {
  const auto diffs = hg::amp::policy_differences();
  std::set<std::string> ops;
  for (const auto& d : diffs) {
    INFO(d.op);
    ops.insert(d.op);
    CHECK(d.halfgrad == hg::amp::to_string(policy_for(d.op)));
    CHECK_FALSE(d.pytorch.empty());
    CHECK_FALSE(d.reason.empty());
  }
  // add/sub/mul/div: a 0-dim F32 tensor widens an F16 tensor here, not in PyTorch.
  CHECK(ops == std::set<std::string>{"add", "sub", "mul", "div"});
  // mean and square match PyTorch (input dtype; F32 through pow), so they are not listed.
  CHECK(ops.count("mean") == 0);
  CHECK(ops.count("square") == 0);
  // Exactly the table entries that carry a PyTorch note.
  size_t marked = 0;
  for (const auto& e : hg::amp::policy_table()) marked += e.pytorch != nullptr;
  CHECK(marked == diffs.size());
}
