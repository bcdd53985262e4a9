# Chapter 12's program: bad input (one line, exit 2), a run in parts equal to a straight run,
# gradient accumulation, divergence (exit 3), and that it learns — all on a tiny GPT and a
# tiny text, seconds each. (Included by tests/CMakeLists.txt.)
if(TARGET lesson_12)
  set(_hg_expect ${PROJECT_SOURCE_DIR}/tests/lessons/expect_error.sh)
  set(_hg_l12 ${CMAKE_CURRENT_LIST_DIR}/lesson_12.sh)
  foreach(case resume accum diverged learns memory plan recompute files live data prompt oversized big_resume untied)
    add_test(NAME lesson_12_${case} COMMAND sh ${_hg_l12} $<TARGET_FILE:lesson_12> ${case})
    set_tests_properties(lesson_12_${case} PROPERTIES LABELS "lesson")
  endforeach()
  add_test(NAME lesson_12_grad_accum_must_divide_the_batch
           COMMAND sh ${_hg_expect} 2 "--grad-accum 3: --batch-size 16 does not split into 3 equal micro-batches"
                   $<TARGET_FILE:lesson_12> --grad-accum 3)
  add_test(NAME lesson_12_heads_must_divide_the_width
           COMMAND sh ${_hg_expect} 2 "n_embd" $<TARGET_FILE:lesson_12> --n-embd 30 --n-head 4)
  add_test(NAME lesson_12_missing_data_file
           COMMAND sh ${_hg_expect} 2 "/nonexistent/corpus.txt" $<TARGET_FILE:lesson_12> --text /nonexistent/corpus.txt)
  # A file that exists but is not text is a data problem: exit 1, as in chapters 13 and 14.
  add_test(NAME lesson_12_binary_data_file
           COMMAND sh ${_hg_expect} 1 "$<TARGET_FILE:lesson_12>" $<TARGET_FILE:lesson_12> --text $<TARGET_FILE:lesson_12>)
  add_test(NAME lesson_12_unknown_precision
           COMMAND sh ${_hg_expect} 2 "fp8" $<TARGET_FILE:lesson_12> --precision fp8)
  add_test(NAME lesson_12_warmup_beyond_the_run
           COMMAND sh ${_hg_expect} 2 "--warmup 50: must be below --steps 40" $<TARGET_FILE:lesson_12> --steps 40 --warmup 50)
  add_test(NAME lesson_12_unknown_flag_exits_2
           COMMAND sh ${_hg_expect} 2 "--no-such-flag" $<TARGET_FILE:lesson_12> --no-such-flag)
  set_tests_properties(lesson_12_grad_accum_must_divide_the_batch lesson_12_heads_must_divide_the_width
                       lesson_12_missing_data_file lesson_12_binary_data_file lesson_12_unknown_precision
                       lesson_12_warmup_beyond_the_run lesson_12_unknown_flag_exits_2 PROPERTIES LABELS "lesson")
endif()
