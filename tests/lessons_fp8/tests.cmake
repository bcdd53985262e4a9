# Chapter 14's program: its command line, a short run of every section that writes the
# fp8_scale events the run log documents, the GPT table on a tiny GPT, and a run that
# diverges. (The grader is tested in tests/exercises/.)
if(TARGET lesson_14)
  add_test(NAME lesson_14_unknown_flag_exits_2
           COMMAND sh -c "\"$0\" --no-such-flag >/dev/null 2>&1; rc=$?; echo \"exit code $rc\"; test $rc -eq 2"
                   $<TARGET_FILE:lesson_14>)
  add_test(NAME lesson_14_bad_run_exits_2
           COMMAND sh ${PROJECT_SOURCE_DIR}/tests/lessons/expect_error.sh 2 "'tensorwise' is not one of bf16, current, delayed, block, mx"
                   $<TARGET_FILE:lesson_14> --runs bf16,tensorwise)
  add_test(NAME lesson_14_short_run
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/short_run.sh $<TARGET_FILE:lesson_14>
                   ${CMAKE_CURRENT_BINARY_DIR}/lesson_14_short_run)
  add_test(NAME lesson_14_gpt_table
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/gpt_run.sh $<TARGET_FILE:lesson_14>
                   ${CMAKE_CURRENT_BINARY_DIR}/lesson_14_gpt_table)
  add_test(NAME lesson_14_diverged_exits_3
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/diverged.sh $<TARGET_FILE:lesson_14>)
  set_tests_properties(lesson_14_unknown_flag_exits_2 lesson_14_bad_run_exits_2 lesson_14_short_run
                       lesson_14_gpt_table lesson_14_diverged_exits_3
                       PROPERTIES LABELS "lesson")
endif()
