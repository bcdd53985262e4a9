# The tour (lessons/tour.sh, what ./lab run shows first), included by tests/CMakeLists.txt.
if(TARGET lesson_04 AND TARGET lesson_06 AND TARGET lesson_10)
  add_test(NAME tour_runs COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/tour_test.sh ${CMAKE_BINARY_DIR} ${PROJECT_SOURCE_DIR})
  set_tests_properties(tour_runs PROPERTIES LABELS "lesson" ENVIRONMENT "OMP_NUM_THREADS=1")
endif()
