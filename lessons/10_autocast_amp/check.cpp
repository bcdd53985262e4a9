// Grades the chapter 10 exercise (student_policy_for and student_cast_dtype).
//
//   1. every op of the policy table gets the table's policy
//   2. an unknown op name throws
//   3. for every policy × input dtype × region, the cast dtype equals what the framework's
//      autocast_cast produces on a real tensor inside a real Autocast region
// Prints what is right and wrong in words; exits 0 only when everything passes.
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/amp/autocast.h"
#include "lessons/10_autocast_amp/exercise.h"

using hg::DType;

namespace {
int failures = 0;
void verdict(bool ok, const std::string& what, const char* hint) {
  std::printf("  [%s] %s\n", ok ? "ok" : "WRONG", what.c_str());
  if (!ok) {
    std::printf("         %s\n", hint);
    ++failures;
  }
}
}  // namespace

int main() {
  std::printf("Chapter 10 exercise: the autocast policy lookup\n");
  {
    int wrong = 0;
    std::string first;
    for (const auto& e : hg::amp::policy_table()) {
      hg::amp::CastPolicy got = hg::amp::CastPolicy::None;
      bool threw = false;
      try { got = student_policy_for(e.op); } catch (const std::exception&) { threw = true; }
      if (threw || got != e.policy) {
        if (wrong++ == 0)
          first = std::string(" (first: '") + e.op + "' should be " + hg::amp::to_string(e.policy) + ")";
      }
    }
    verdict(wrong == 0, "every op in the table gets its policy" + first,
            "loop over hg::amp::policy_table() and return entry.policy when entry.op matches.");
  }
  {
    bool threw = false;
    try { student_policy_for("lineer"); } catch (const std::invalid_argument&) { threw = true; }
    verdict(threw, "an unknown op ('lineer') throws std::invalid_argument",
            "a typo must not silently mean 'None': throw when the loop finds nothing.");
  }
  {
    // Reference: the framework's autocast_cast on a real tensor in a real region.
    int wrong = 0;
    std::string first;
    const std::vector<std::pair<const char*, hg::amp::CastPolicy>> ops = {
        {"linear", hg::amp::CastPolicy::LowerPrecision}, {"softmax", hg::amp::CastPolicy::FP32},
        {"add", hg::amp::CastPolicy::Promote}, {"relu", hg::amp::CastPolicy::None}};
    for (DType region : {DType::F16, DType::BF16})
      for (DType in : {DType::F32, DType::F16, DType::BF16, DType::F64})
        for (const auto& [op, policy] : ops) {
          hg::amp::Autocast ac(region);
          const DType want = hg::amp::autocast_cast(hg::Tensor::ones({2}, in), op).dtype();
          const DType got = student_cast_dtype(policy, in, region);
          if (got != want && wrong++ == 0)
            first = std::string(" (first: ") + hg::amp::to_string(policy) + ", input " +
                    hg::dtype_name(in) + ", region " + hg::dtype_name(region) + " should give " +
                    hg::dtype_name(want) + ", got " + hg::dtype_name(got) + ")";
        }
    verdict(wrong == 0, "cast dtypes match autocast_cast for every policy, input and region" + first,
            "LowerPrecision -> region, FP32 -> F32, Promote/None -> input; F64 stays F64.");
  }
  if (failures == 0) std::printf("All checks passed. That is the lookup every op does at entry.\n");
  else std::printf("%d check(s) failed. Edit lessons/10_autocast_amp/exercise.cpp and run "
                   "./lab check 10 again.\n", failures);
  return failures == 0 ? 0 : 1;
}
