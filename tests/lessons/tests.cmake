# Chapter 04: the program's bad-input behaviour, and the grader on the unsolved exercise.
# (Included by tests/CMakeLists.txt; the targets come from lessons/CMakeLists.txt.)
if(TARGET check_04)
  # The exercise as shipped (TODOs, placeholder) must be graded as failing: a grader that
  # passes it would grade nothing.
  add_test(NAME check_04_exercise_is_graded_failing COMMAND check_04)
  set_tests_properties(check_04_exercise_is_graded_failing PROPERTIES WILL_FAIL TRUE LABELS "lesson")
endif()
if(TARGET lesson_04)
  set(_hg_expect ${CMAKE_CURRENT_LIST_DIR}/expect_error.sh)
  # Not a number, and an unknown format: one line saying what was expected, exit code 2.
  add_test(NAME lesson_04_bad_value_exits_2
           COMMAND sh ${_hg_expect} 2 "--value 'abc' is not a number; expected a decimal like"
                   $<TARGET_FILE:lesson_04> --value abc)
  add_test(NAME lesson_04_bad_format_exits_2
           COMMAND sh ${_hg_expect} 2 "unknown --format 'xyz'; expected one of fp32, tf32, fp16, bf16, e4m3, e5m2"
                   $<TARGET_FILE:lesson_04> --format xyz)
  add_test(NAME lesson_04_bad_flag_exits_2
           COMMAND sh ${_hg_expect} 2 "lesson 04:" $<TARGET_FILE:lesson_04> --frobnicate)
  add_test(NAME lesson_04_runs COMMAND lesson_04)
  set_tests_properties(lesson_04_bad_value_exits_2 lesson_04_bad_format_exits_2
                       lesson_04_bad_flag_exits_2 lesson_04_runs PROPERTIES LABELS "lesson")
  set_tests_properties(lesson_04_runs PROPERTIES PASS_REGULAR_EXPRESSION "65520 becomes inf in FP16")
endif()
