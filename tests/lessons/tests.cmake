# Chapter 04: the program's bad-input behaviour. (The graders are tested in tests/exercises/.)
# (Included by tests/CMakeLists.txt; the targets come from lessons/CMakeLists.txt.)
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

# Every chapter program exits 2 on a command-line error (an unknown flag; for the training
# chapters also a --resume file that does not exist), whatever kind of error CLI11 saw.
foreach(nn 01 02 03 04 05 06 07 08 09 10 11)
  if(TARGET lesson_${nn})
    add_test(NAME lesson_${nn}_unknown_flag_exits_2
             COMMAND sh -c "\"$0\" --no-such-flag >/dev/null 2>&1; rc=$?; echo \"exit code $rc\"; test $rc -eq 2"
                     $<TARGET_FILE:lesson_${nn}>)
    set_tests_properties(lesson_${nn}_unknown_flag_exits_2 PROPERTIES LABELS "lesson")
  endif()
endforeach()
foreach(nn 02 09)
  if(TARGET lesson_${nn})
    add_test(NAME lesson_${nn}_missing_resume_file_exits_2
             COMMAND sh -c "\"$0\" --resume /nonexistent/halfgrad.ckpt >/dev/null 2>&1; rc=$?; echo \"exit code $rc\"; test $rc -eq 2"
                     $<TARGET_FILE:lesson_${nn}>)
    set_tests_properties(lesson_${nn}_missing_resume_file_exits_2 PROPERTIES LABELS "lesson")
  endif()
endforeach()

# What the chapters state, printed by the command they name (tests/lessons/fact.sh: the text
# must appear in the program's output and in the README; an -x text in neither).
set(_hg_fact ${CMAKE_CURRENT_LIST_DIR}/fact.sh)
set(_hg_lessons ${CMAKE_SOURCE_DIR}/lessons)
function(hg_fact name)
  add_test(NAME fact_${name} COMMAND sh ${_hg_fact} ${ARGN})
  set_tests_properties(fact_${name} PROPERTIES LABELS "lesson;fact" WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()
if(TARGET lesson_01)
  # The sweep of h the README pastes: smallest error at 1e-5, larger both ways.
  hg_fact(01_h_sweep ${_hg_lessons}/01_tensors_autograd/README.md
          -e "1e-4  finite diff.: 2.362e-09" -e "1e-5  finite diff.: 2.172e-11" -e "1e-6  finite diff.: 3.934e-11"
          -x "h = 1e-6 balances" -- sh ${CMAKE_CURRENT_LIST_DIR}/h_sweep_01.sh $<TARGET_FILE:lesson_01>)
  # A large h is truncation error, not a bug in a backward: the verdict says which.
  hg_fact(01_large_h_is_truncation ${_hg_lessons}/01_tensors_autograd/README.md -c 1
          -e "within their own truncation error" -x "(a bug in an op's backward?)"
          -- $<TARGET_FILE:lesson_01> --h 1e-2)
endif()
