// doctest's implementation and main(), compiled once for every doctest binary of tests/
// (hg_doctest_main). A test file includes <doctest/doctest.h> for the test macros only;
// defining DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN in each of the ~110 test files would compile
// this part of doctest ~110 times, about three seconds each.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
