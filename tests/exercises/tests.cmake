# The graders, graded (included by tests/CMakeLists.txt; hg_add_grader comes from
# lessons/CMakeLists.txt).
#
# Never the learner's exercise.cpp: `./lab test` must be green whether the exercises are
# untouched, half-written or solved. Every grader here is built from a scratch copy
# (build/tests/exercises/<variant>/lessons/NN_slug/) of the chapter's check.cpp and
# exercise.h, with one of these in the place of exercise.cpp:
#   lessons/NN_slug/solution/exercise.cpp   must pass                 exercises_solutions_pass
#   tests/exercises/untouched/NN_slug.cpp   must fail with score 0    exercises_untouched_fail
#                                           (the exercise as shipped: keep it equal to
#                                            lessons/NN_slug/exercise.cpp when changing either)
#   tests/exercises/wrong/NN_what.cpp       must fail, with an explanation matching its
#                                           "// expect: REGEX" line   exercise_NN_what_is_rejected
#                                           (an optional "// args: ..." line: more arguments
#                                            for the grader, such as a short --time-limit)
# The wrong answers include cheats (an endless loop, a crash, files opened, written or deleted,
# a PASS printed, code before main(), a solution #included or copied, a C library function
# replaced, the environment read, answers replayed from a table, the framework's answer
# called in any form): each must be refused, by the build's vetting, by the inspection of the
# object, by the sandbox, or by the fresh inputs (lessons/grader/grader.h). They are graded
# with the chapter's solution beside them, as on the teacher's copy.
#
# The student edition (./lab class student-copy) has neither solution/ nor wrong/: the
# graders of the solutions are then not built, and exercises_solutions_pass is not added.
get_property(_hg_chapters GLOBAL PROPERTY HG_EXERCISE_CHAPTERS)
set(_hg_scratch ${CMAKE_BINARY_DIR}/tests/exercises)
set(_hg_solved "")
set(_hg_untouched "")
foreach(dir ${_hg_chapters})
  get_filename_component(slug ${dir} NAME)
  string(SUBSTRING ${slug} 0 2 nn)
  set(_hg_solution "")
  if(EXISTS ${dir}/solution/exercise.cpp)
    set(_hg_solution SOLUTION ${dir}/solution/exercise.cpp)
    hg_add_grader(TARGET exercise_${nn}_solved CHAPTER ${dir} EXERCISE ${dir}/solution/exercise.cpp
                  SCRATCH ${_hg_scratch}/solved)
    list(APPEND _hg_solved $<TARGET_FILE:exercise_${nn}_solved>)
  endif()
  if(NOT EXISTS ${CMAKE_CURRENT_LIST_DIR}/untouched/${slug}.cpp)
    message(FATAL_ERROR "tests/exercises/untouched/${slug}.cpp is missing: a copy of "
                        "lessons/${slug}/exercise.cpp as shipped, which the tests grade")
  endif()
  hg_add_grader(TARGET exercise_${nn}_untouched CHAPTER ${dir}
                EXERCISE ${CMAKE_CURRENT_LIST_DIR}/untouched/${slug}.cpp SCRATCH ${_hg_scratch}/untouched)
  list(APPEND _hg_untouched $<TARGET_FILE:exercise_${nn}_untouched>)

  file(GLOB _hg_wrong CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/wrong/${nn}_*.cpp)
  foreach(wrong ${_hg_wrong})
    get_filename_component(name ${wrong} NAME_WE)
    file(STRINGS ${wrong} expect REGEX "^// expect: ")
    list(LENGTH expect n_expect)
    if(NOT n_expect EQUAL 1)
      message(FATAL_ERROR "${wrong}: needs exactly one line '// expect: REGEX' (the message the grader must give)")
    endif()
    string(REGEX REPLACE "^// expect: " "" expect "${expect}")
    file(STRINGS ${wrong} args REGEX "^// args: ")
    string(REGEX REPLACE "^// args: " "" args "${args}")
    separate_arguments(args UNIX_COMMAND "${args}")
    hg_add_grader(TARGET exercise_wrong_${name} CHAPTER ${dir} EXERCISE ${wrong}
                  SCRATCH ${_hg_scratch}/wrong_${name} ${_hg_solution})
    add_test(NAME exercise_${name}_is_rejected
             COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_rejected.sh "${expect}"
                     $<TARGET_FILE:exercise_wrong_${name}> ${args})
    set_tests_properties(exercise_${name}_is_rejected PROPERTIES LABELS "exercise")
  endforeach()
endforeach()

# The reference solution copied whole as the learner's exercise.cpp (chapter 01): refused on
# the teacher's copy, where the solution is there to compare with.
list(GET _hg_chapters 0 _hg_first)
if(EXISTS ${_hg_first}/solution/exercise.cpp)
  get_filename_component(slug ${_hg_first} NAME)
  string(SUBSTRING ${slug} 0 2 nn)
  hg_add_grader(TARGET exercise_wrong_${nn}_copies_solution CHAPTER ${_hg_first}
                EXERCISE ${_hg_first}/solution/exercise.cpp SCRATCH ${_hg_scratch}/wrong_${nn}_copies_solution
                SOLUTION ${_hg_first}/solution/exercise.cpp)
  add_test(NAME exercise_${nn}_copies_solution_is_rejected
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/expect_rejected.sh "is the reference solution .* copied"
                   $<TARGET_FILE:exercise_wrong_${nn}_copies_solution>)
  set_tests_properties(exercise_${nn}_copies_solution_is_rejected PROPERTIES LABELS "exercise")
endif()

# Every solution copied over a scratch copy of the exercises: every grader passes.
if(_hg_solved)
  add_test(NAME exercises_solutions_pass COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/grade_all.sh pass ${PROJECT_SOURCE_DIR} ${_hg_solved})
  set_tests_properties(exercises_solutions_pass PROPERTIES LABELS "exercise")
endif()
# Every exercise as shipped: every grader fails, scores 0 (a check a stub passes grades nothing),
# and its closing line sends the learner to a heading the README has.
add_test(NAME exercises_untouched_fail COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/grade_all.sh fail ${PROJECT_SOURCE_DIR} ${_hg_untouched})
# Every README heading a grader's explanations cite exists.
add_test(NAME exercises_cited_readme_sections_exist
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/cited_sections.sh ${_hg_chapters})
set_tests_properties(exercises_untouched_fail exercises_cited_readme_sections_exist PROPERTIES LABELS "exercise")

# The inspection's two readers (own_code_only): denied names in every form, inlined calls.
add_executable(test_grader_inspection ${CMAKE_CURRENT_LIST_DIR}/test_grader_inspection.cpp)
target_link_libraries(test_grader_inspection PRIVATE hg_grader hg_doctest_main hg_warnings)
hg_test_O1(test_grader_inspection)
doctest_discover_tests(test_grader_inspection PROPERTIES LABELS "exercise")

# The `./lab check` command itself (lab_check.sh says what it checks), on a scratch root with
# a fake cmake and three of the graders above.
add_executable(exercises_report_check ${CMAKE_CURRENT_LIST_DIR}/report_check.cpp)
target_link_libraries(exercises_report_check PRIVATE nlohmann_json::nlohmann_json hg_warnings)
hg_test_O1(exercises_report_check)
if(TARGET exercise_01_solved AND TARGET exercise_02_untouched AND TARGET exercise_wrong_12_writes_result)
  add_test(NAME lab_check_command
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/lab_check.sh ${PROJECT_SOURCE_DIR}/lab
                   $<TARGET_FILE:exercise_01_solved> $<TARGET_FILE:exercise_02_untouched>
                   $<TARGET_FILE:exercise_wrong_12_writes_result> $<TARGET_FILE:exercises_report_check>)
  set_tests_properties(lab_check_command PROPERTIES LABELS "exercise")
endif()

# The teacher's side. ./lab class grade on five students' submissions (class_grade.sh says
# what is checked), with the graders above standing in for the ones it builds.
if(TARGET exercise_01_solved AND TARGET exercise_wrong_01_calls_framework AND TARGET exercise_wrong_01_diagonal_only
   AND TARGET exercise_02_untouched)
  add_test(NAME lab_class_grade
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/class_grade.sh ${PROJECT_SOURCE_DIR}/lab ${PROJECT_SOURCE_DIR}
                   $<TARGET_FILE:exercise_01_solved> $<TARGET_FILE:exercise_wrong_01_calls_framework>
                   $<TARGET_FILE:exercise_wrong_01_diagonal_only> $<TARGET_FILE:exercise_02_untouched>)
  set_tests_properties(lab_class_grade PROPERTIES LABELS "exercise")
endif()
# The student edition, ./lab reset and ./lab class hand-in (class_copy.sh says what is checked).
add_test(NAME lab_class_student_copy_reset_hand_in
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/class_copy.sh ${PROJECT_SOURCE_DIR})
set_tests_properties(lab_class_student_copy_reset_hand_in PROPERTIES LABELS "exercise")
