# The chapter programs and bad input (included by tests/CMakeLists.txt; the targets come from
# lessons/CMakeLists.txt).
#
#   test_train_cli                 framework/train/'s checks, one by one
set(_hg_cli ${CMAKE_CURRENT_LIST_DIR})

# The plumbing alone (framework/train/: guard, value checks, run folders, resume rules).
add_executable(test_train_cli ${_hg_cli}/test_train_cli.cpp)
target_link_libraries(test_train_cli PRIVATE halfgrad doctest::doctest hg_warnings)
target_compile_definitions(test_train_cli PRIVATE DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN)
doctest_discover_tests(test_train_cli)
