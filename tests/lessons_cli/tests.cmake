# The chapter programs and bad input (included by tests/CMakeLists.txt; the targets come from
# lessons/CMakeLists.txt).
#
#   test_train_cli                 framework/train/'s checks, one by one
#   lesson_NN_refuses_bad_values   every bad value of bad_values.txt: exit 2, one line, no work
#   lesson_NN_diverged_*           a loss or weight that becomes inf/NaN: exit 3, one line per
#                                  run on stderr, run.json "diverged", no checkpoint
#   lesson_06_run_name_taken       a second run with the same name is refused; --overwrite
#   lesson_NN_resume_flags         --resume and the flags the checkpoint decides
#   lesson_01_dot_write_failure    --dot FILE that cannot be written: one line, exit 1
set(_hg_cli ${CMAKE_CURRENT_LIST_DIR})

# The plumbing alone (framework/train/: guard, value checks, run folders, resume rules).
add_executable(test_train_cli ${_hg_cli}/test_train_cli.cpp)
target_link_libraries(test_train_cli PRIVATE halfgrad hg_doctest_main hg_warnings)
hg_test_O1(test_train_cli)
doctest_discover_tests(test_train_cli)

foreach(nn 01 02 03 04 05 06 07 08 09 10 11 13)
  if(TARGET lesson_${nn})
    add_test(NAME lesson_${nn}_refuses_bad_values
             COMMAND sh ${_hg_cli}/bad_values.sh $<TARGET_FILE_DIR:lesson_${nn}> ${nn})
    set_tests_properties(lesson_${nn}_refuses_bad_values PROPERTIES LABELS "lesson")
  endif()
endforeach()

# diverged test: NAME LESSON IMAGES N_DIVERGED N_RESULT ARGS... (tests/lessons_cli/diverge.sh)
function(hg_diverge_test name nn images n_div n_result)
  if(TARGET lesson_${nn})
    add_test(NAME lesson_${nn}_${name}
             COMMAND ${CMAKE_COMMAND} -E env LIMIT_TRAIN=${images}
                     sh ${_hg_cli}/diverge.sh $<TARGET_FILE:lesson_${nn}> ${n_div} ${n_result} ${ARGN})
    set_tests_properties(lesson_${nn}_${name} PROPERTIES LABELS "lesson")
  endif()
endfunction()
# Chapter 02 used to throw (exit 1) on a NaN loss, or write NaN weights into its checkpoint.
hg_diverge_test(diverged_stops_exit_3 02 256 1 0 --lr 1e30 --checkpoint d.ckpt --run-name d)
hg_diverge_test(diverged_stops_exit_3 06 256 1 0 --lr 1e30 --only fp16 --run-name d)
hg_diverge_test(diverged_stops_exit_3 07 256 1 0 --lr 1e30 --runs master_weights --run-name d)
# Chapter 08's "too large a scale": the static_scale run diverges at step 0, the master
# weights run beside it finishes and reports.
hg_diverge_test(diverged_stops_exit_3 08 256 1 1 --runs master_weights,static_scale --loss-scale 1048576 --run-name d)
hg_diverge_test(diverged_stops_exit_3 09 256 1 0 --lr 1e30 --run-name d)
# Chapters 10 and 11 trained on NaN to the end and said "finished" (--lr 1e6; ten steps).
hg_diverge_test(diverged_stops_exit_3 10 1280 2 0 --lr 1e6 --runs fp32,amp_f16 --run-name d)
hg_diverge_test(diverged_stops_exit_3 11 1280 2 0 --lr 1e6 --run-name d)
# Not divergence: steps the GradScaler skips (scaled gradients overflow F16, the weights are
# not touched) while it halves an absurd initial scale, then trains.
if(TARGET lesson_09)
  add_test(NAME lesson_09_skipped_steps_are_not_divergence
           COMMAND ${CMAKE_COMMAND} -E env "EXPECT=(halved: the step before overflowed and was skipped)"
                   sh ${_hg_cli}/diverge.sh $<TARGET_FILE:lesson_09> 0 1 --init-scale 1e30 --batch-size 2
                   --stats-every 0 --run-name s)
  set_tests_properties(lesson_09_skipped_steps_are_not_divergence PROPERTIES LABELS "lesson")
endif()

if(TARGET lesson_06)
  add_test(NAME lesson_06_run_name_taken COMMAND sh ${_hg_cli}/run_names.sh $<TARGET_FILE:lesson_06>)
  set_tests_properties(lesson_06_run_name_taken PROPERTIES LABELS "lesson")
endif()

foreach(nn 02)  # the chapter that checkpoints (chapter 09 refuses --checkpoint: see lessons_amp)
  if(TARGET lesson_${nn})
    add_test(NAME lesson_${nn}_resume_flags COMMAND sh ${_hg_cli}/resume.sh $<TARGET_FILE:lesson_${nn}> ${nn})
    set_tests_properties(lesson_${nn}_resume_flags PROPERTIES LABELS "lesson")
  endif()
endforeach()

# Chapter 01's --dot when the file cannot be written (it used to say "graph written", exit 0).
if(TARGET lesson_01)
  add_test(NAME lesson_01_dot_write_failure COMMAND sh ${_hg_cli}/dot_01.sh $<TARGET_FILE:lesson_01>)
  set_tests_properties(lesson_01_dot_write_failure PROPERTIES LABELS "lesson")
endif()
