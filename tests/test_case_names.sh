#!/bin/sh
# test_case_names.sh ROOT — every doctest TEST_CASE name must survive ctest's registration.
# doctest_discover_tests reads the names into a CMake list, and a CMake list is split at ';':
# "a; b" became two tests, "a" and " b", each running a filter that matches no test case,
# so ctest reported them passed while the real test case never ran. Commas are escaped by
# the discovery script and are fine.
root="$1"
[ -d "$root/tests" ] || { echo "usage: test_case_names.sh ROOT"; exit 2; }
all=$(grep -rhoE --include='*.cpp' --include='*.cu' --include='*.h' 'TEST_CASE\("[^"]*"' "$root/tests" "$root/lessons" | wc -l)
bad=$(grep -rnE --include='*.cpp' --include='*.cu' --include='*.h' 'TEST_CASE\("[^"]*;[^"]*"' "$root/tests" "$root/lessons")
if [ "$all" -lt 100 ]; then echo "found only $all TEST_CASE names under $root: the search is broken"; exit 1; fi
if [ -n "$bad" ]; then
  echo "TEST_CASE names with ';' (ctest would split them and run nothing; use ',' instead):"
  echo "$bad"
  exit 1
fi
echo "$all TEST_CASE names, none with ';'"
