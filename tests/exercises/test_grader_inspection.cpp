// The two readers under own_code_only() (lessons/grader/grader.h): which symbols use a denied
// name, and which functions the debug information says were inlined.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lessons/grader/grader.h"

using grader::mentions;

TEST_CASE("mentions: a denied name in every form a symbol takes") {
  // a function, its overloads, a template of it, its clones
  CHECK(mentions("hg::float_to_half_bits(float)", "hg::float_to_half_bits"));
  CHECK(mentions("hg::float_to_half_bits", "hg::float_to_half_bits"));  // an inlined one: no parameters
  CHECK(mentions("hg::cast<float>(hg::Tensor const&)", "hg::cast"));
  CHECK(mentions("hg::is_nan_bits(unsigned long) [clone .constprop.0]", "hg::is_nan_bits"));
  // a member of a denied class: its methods, constructor and operators, named through "::"
  CHECK(mentions("hg::fp8::DelayedScaling::update(float)", "hg::fp8::DelayedScaling"));
  CHECK(mentions("hg::fp8::DelayedScaling::DelayedScaling(int)", "hg::fp8::DelayedScaling"));
  CHECK(mentions("hg::fp8::DelayedScaling::operator()(float) const", "hg::fp8::DelayedScaling"));
  CHECK(mentions("hg::Tensor::to(hg::DType) const", "hg::Tensor::to"));
  CHECK(mentions("hg::operator+(hg::Tensor const&, hg::Tensor const&)", "hg::operator+"));
  // as a template argument or a parameter type
  CHECK(mentions("std::vector<hg::fp8::DelayedScaling, std::allocator<hg::fp8::DelayedScaling> >::push_back",
                 "hg::fp8::DelayedScaling"));
  // a whole namespace or class
  CHECK(mentions("hg::exp(hg::Tensor const&)", "hg::"));
  CHECK(mentions("hg::amp::GradScaler::step(hg::optim::Optimizer&)", "hg::amp::GradScaler::"));
  // a C name
  CHECK(mentions("getenv", "getenv"));
  CHECK(mentions("environ", "environ"));

  // not a longer name, nor one in another namespace, nor a part of one
  CHECK_FALSE(mentions("hg::float_to_half_bits_n(float const*, unsigned short*, unsigned long)",
                       "hg::float_to_half_bits"));
  CHECK_FALSE(mentions("my::hg::exp(double)", "hg::exp"));
  CHECK_FALSE(mentions("hg::Tensor::to_double_vector() const", "hg::Tensor::to"));
  CHECK_FALSE(mentions("hg::fp8::DelayedScalingTable::at(int)", "hg::fp8::DelayedScaling"));
  CHECK_FALSE(mentions("my_getenv", "getenv"));
  CHECK_FALSE(mentions("softmax_backward(std::vector<double> const&)", "hg::"));
  // an overload given with its parameters matches that overload only
  CHECK(mentions("hg::half::half(float)", "hg::half::half(float)"));
  CHECK_FALSE(mentions("hg::half::half(double)", "hg::half::half(float)"));
}

// What `readelf --debug-dump=info -W` prints for an object whose function inlined an
// always_inline function of namespace hg (declared with a linkage name, defined through
// DW_AT_specification) and a function known by its name only; trimmed to the lines read.
const char* const kDebugInfo = R"( <0><b>: Abbrev Number: 1 (DW_TAG_compile_unit)
    <c>   DW_AT_producer    : (indirect string, offset: 0x10): GNU C++17 12.2.0 -O3 -g -fno-inline
    <10>   DW_AT_name        : (indirect line string, offset: 0x0): exercise.cpp
 <1><20>: Abbrev Number: 2 (DW_TAG_namespace)
    <21>   DW_AT_name        : hg
 <2><30>: Abbrev Number: 3 (DW_TAG_subprogram)
    <31>   DW_AT_external    : 1
    <31>   DW_AT_name        : (indirect string, offset: 0x5b23): convert_bits
    <3e>   DW_AT_linkage_name: (indirect string, offset: 0x8ec8): _ZN2hg12convert_bitsEmRKNS_11FloatFormatES2_NS_11Fp8OverflowE
    <46>   DW_AT_declaration : 1
 <2><50>: Abbrev Number: 4 (DW_TAG_structure_type)
    <51>   DW_AT_name        : Scaler
 <3><58>: Abbrev Number: 3 (DW_TAG_subprogram)
    <59>   DW_AT_name        : next
    <5a>   DW_AT_declaration : 1
 <3><5e>: Abbrev Number: 0
 <2><60>: Abbrev Number: 0
 <1><70>: Abbrev Number: 5 (DW_TAG_subprogram)
    <71>   DW_AT_specification: <0x30>
    <75>   DW_AT_inline      : 3	(declared as inline and inlined)
 <1><80>: Abbrev Number: 5 (DW_TAG_subprogram)
    <81>   DW_AT_specification: <0x58>
    <85>   DW_AT_inline      : 3	(declared as inline and inlined)
 <1><90>: Abbrev Number: 6 (DW_TAG_subprogram)
    <91>   DW_AT_external    : 1
    <91>   DW_AT_name        : (indirect string, offset: 0x20): student_float_to_half
 <2><a0>: Abbrev Number: 7 (DW_TAG_inlined_subroutine)
    <a1>   DW_AT_abstract_origin: <0x70>
    <a5>   DW_AT_call_line   : 8
 <2><b0>: Abbrev Number: 7 (DW_TAG_inlined_subroutine)
    <b1>   DW_AT_abstract_origin: <0x80>
 <2><c0>: Abbrev Number: 7 (DW_TAG_inlined_subroutine)
    <c1>   DW_AT_abstract_origin: <0x70>
 <2><d0>: Abbrev Number: 0
)";

TEST_CASE("inlined_functions: every inlined call, named with its namespace") {
  const std::vector<std::string> got = grader::inlined_functions(kDebugInfo);
  for (const std::string& f : got) MESSAGE(f);
  REQUIRE(got.size() == 2);  // convert_bits is inlined twice, named once
  CHECK(got[0] == "hg::convert_bits(unsigned long, hg::FloatFormat const&, hg::FloatFormat const&, hg::Fp8Overflow)");
  CHECK(got[1] == "hg::Scaler::next");
  CHECK(mentions(got[0], "hg::convert_bits"));
  CHECK(mentions(got[1], "hg::Scaler"));
  CHECK(grader::inlined_functions("").empty());
}
