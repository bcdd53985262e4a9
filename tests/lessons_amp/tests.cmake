# Chapters 06–11 (included by tests/CMakeLists.txt; targets come from lessons/CMakeLists.txt).
# (The exercise graders are tested in tests/exercises/.)

# Bad flags exit 2 with a message (CLI11 or the chapter's own check).
foreach(nn 07 08 09 10 11)
  if(TARGET lesson_${nn})
    add_test(NAME lesson_${nn}_bad_runs_exits_2
             COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/../lessons/expect_error.sh 2 "--runs: 'nonsense' is not one of"
                     $<TARGET_FILE:lesson_${nn}> --runs nonsense)
    set_tests_properties(lesson_${nn}_bad_runs_exits_2 PROPERTIES LABELS "lesson")
  endif()
endforeach()

# Chapter 10's whole pipeline on a slice of FashionMNIST: FP32 and AMP runs, the report and
# the RESULT lines the benchmark parses.
if(TARGET lesson_10)
  # --device auto: the GPU when there is one, else the CPU after one line on stderr.
  add_test(NAME lesson_10_small_run
           COMMAND lesson_10 --epochs 1 --limit-train 512 --limit-test 200 --runs fp32,amp_f16
                   --run-name test_lesson_10 --overwrite --threads 1 --device auto)
  set_tests_properties(lesson_10_small_run PROPERTIES
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
    PASS_REGULAR_EXPRESSION "RESULT model=mlp device=(cpu|cuda) precision=amp_f16 epochs=1 batch=128 seconds_per_epoch=[0-9.]+ test_accuracy=0\\.[0-9]+"
    LABELS "lesson")
endif()

# Common flags a chapter does not implement are refused with one line and exit code 2.
foreach(nn 06 10)
  if(TARGET lesson_${nn})
    add_test(NAME lesson_${nn}_unsupported_flag_exits_2
             COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/../lessons/expect_error.sh 2 "not supported in this chapter"
                     $<TARGET_FILE:lesson_${nn}> --checkpoint ckpt.bin)
    set_tests_properties(lesson_${nn}_unsupported_flag_exits_2 PROPERTIES LABELS "lesson")
  endif()
endforeach()

# Chapter 09 implements --checkpoint/--resume (the dynamic_scale run alone): other flags it
# does not implement are still refused, so is a checkpoint of several runs, and a resumed
# run ends in the same checkpoint, byte for byte, as the uninterrupted one.
if(TARGET lesson_09)
  add_test(NAME lesson_09_unsupported_flag_exits_2
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/../lessons/expect_error.sh 2 "not supported in this chapter"
                   $<TARGET_FILE:lesson_09> --lr-schedule cosine)
  add_test(NAME lesson_09_checkpoint_of_several_runs_exits_2
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/../lessons/expect_error.sh 2 "need --runs dynamic_scale alone"
                   $<TARGET_FILE:lesson_09> --runs fp32,dynamic_scale --checkpoint ckpt.bin)
  add_test(NAME lesson_09_resume_is_bit_exact
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/resume_09.sh $<TARGET_FILE:lesson_09>)
  set_tests_properties(lesson_09_unsupported_flag_exits_2 lesson_09_checkpoint_of_several_runs_exits_2
                       lesson_09_resume_is_bit_exact PROPERTIES LABELS "lesson")
endif()
