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
