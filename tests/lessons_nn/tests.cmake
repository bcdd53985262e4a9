# Chapters 01 and 02 as tests (included by tests/CMakeLists.txt).
#
# lesson_01 exits 0 only when the gradient by hand, by autograd and by finite differences agree.
if(TARGET lesson_01)
  add_test(NAME lesson_01_gradients_agree COMMAND lesson_01)
  set_tests_properties(lesson_01_gradients_agree PROPERTIES LABELS "lesson")
endif()

if(TARGET lesson_02)
  # The whole chapter pipeline on a slice of FashionMNIST: data, training, evaluation, report,
  # run log, and the RESULT line benchmarks parse.
  add_test(NAME lesson_02_small_run
           COMMAND lesson_02 --model mlp --epochs 1 --limit-train 2000 --limit-test 500
                   --run-name test_lesson_02 --overwrite --threads 1)
  set_tests_properties(lesson_02_small_run PROPERTIES
    WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
    PASS_REGULAR_EXPRESSION "RESULT model=mlp precision=fp32 epochs=1 seconds_per_epoch=[0-9.]+ test_accuracy=0\\.[0-9]+"
    LABELS "lesson")
  # A bad flag is refused (CLI11 exits 2 with the reason).
  add_test(NAME lesson_02_bad_model COMMAND lesson_02 --model vgg)
  set_tests_properties(lesson_02_bad_model PROPERTIES WILL_FAIL TRUE LABELS "lesson")
  if(NOT HG_WITH_CUDA)
    # Asking for the GPU in a CPU-only build names the problem and the fix.
    add_test(NAME lesson_02_cuda_without_cuda COMMAND lesson_02 --device cuda)
    set_tests_properties(lesson_02_cuda_without_cuda PROPERTIES
      PASS_REGULAR_EXPRESSION "built without CUDA; use --device cpu" LABELS "lesson")
  endif()
endif()
