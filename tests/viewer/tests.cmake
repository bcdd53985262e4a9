# Viewer tests (included by tests/CMakeLists.txt).
#
# test_viewer_run_log    the run-log reader, its validation of every field, and the synthetic
#                        demo runs (doctest).
# test_viewer_run_set    the runs followed under one memory budget: read when shown, unloaded
#                        when shown least recently, stopped at a share, file stems (doctest).
# test_viewer_plot_math  ranges, ticks and the heat map's cells for any input (doctest).
#                        The three need no display and no GL, so they are built even when the
#                        viewer is not.
# viewer_screenshots     headless screenshots under xvfb-run, checked by viewer_png_check.
# viewer_bad_runs        a corpus of damaged run folders (make_bad_runs.sh) rendered headless
#                        under a time and a memory limit: no crash, no hang, corrupt lines reported.
# viewer_many_runs       4000 run folders (runs/x/rank<k>) under a memory and a time limit: each
#                        panel reads only what it shows; {run} in --screenshot names each rank's
#                        picture apart and refuses two runs in one file.
#                        The three exit 77 (skipped, never passed) when xvfb-run or the viewer is missing.
set(_hg_tdir ${CMAKE_CURRENT_LIST_DIR})

foreach(_hg_t run_log run_set plot_math)
  add_executable(test_viewer_${_hg_t} ${_hg_tdir}/test_${_hg_t}.cpp)
  target_link_libraries(test_viewer_${_hg_t} PRIVATE hg_viewer_core hg_doctest_main hg_warnings)
  hg_test_O1(test_viewer_${_hg_t})
  target_compile_definitions(test_viewer_${_hg_t} PRIVATE HG_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  doctest_discover_tests(test_viewer_${_hg_t} PROPERTIES SKIP_RETURN_CODE 77)
endforeach()

# Reads the PNGs (stb_image) and the bit-box sidecar; one subcommand per check.
add_executable(viewer_png_check ${_hg_tdir}/png_check.cpp)
target_include_directories(viewer_png_check PRIVATE ${PROJECT_SOURCE_DIR} ${HG_STB_INCLUDE})
target_link_libraries(viewer_png_check PRIVATE ${HG_STB_LIB} nlohmann_json::nlohmann_json hg_warnings)
hg_test_O1(viewer_png_check)

if(HG_WITH_VIEWER)
  set(_hg_viewer_exe $<TARGET_FILE:halfgrad-viewer>)
else()
  set(_hg_viewer_exe "")  # the script then exits 77: "viewer not built"
endif()
add_test(NAME viewer_screenshots
         COMMAND bash ${_hg_tdir}/screenshots_test.sh "${_hg_viewer_exe}"
                 $<TARGET_FILE:viewer_png_check> ${CMAKE_CURRENT_BINARY_DIR}/viewer_screenshots)
set_tests_properties(viewer_screenshots PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)

add_test(NAME viewer_bad_runs
         COMMAND bash ${_hg_tdir}/bad_runs_test.sh "${_hg_viewer_exe}"
                 $<TARGET_FILE:viewer_png_check> ${CMAKE_CURRENT_BINARY_DIR}/viewer_bad_runs)
set_tests_properties(viewer_bad_runs PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240)

add_test(NAME viewer_many_runs
         COMMAND bash ${_hg_tdir}/many_runs_test.sh "${_hg_viewer_exe}"
                 $<TARGET_FILE:viewer_png_check> ${CMAKE_CURRENT_BINARY_DIR}/viewer_many_runs)
set_tests_properties(viewer_many_runs PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 180)

# test_viewer_lab   the Lab panel's process side (viewer/lab.h): a new folder, a command
#                   appended whole, a run killed from outside seen as ended (doctest, no display).
# viewer_lab        the Lab panel under xvfb-run (lab_test.sh): a live run from --script with every
#                   command, its log and picture; the same script twice, the same log; a bad script
#                   refused; a run that dies reported; the viewer killed, the run's files whole.
add_executable(test_viewer_lab ${_hg_tdir}/test_lab.cpp)
target_link_libraries(test_viewer_lab PRIVATE hg_viewer_core hg_doctest_main hg_warnings)
hg_test_O1(test_viewer_lab)
target_compile_definitions(test_viewer_lab PRIVATE HG_LIVE_EXE="$<TARGET_FILE:halfgrad-live>")
add_dependencies(test_viewer_lab halfgrad-live)
doctest_discover_tests(test_viewer_lab PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT OMP_WAIT_POLICY=PASSIVE)

add_test(NAME viewer_lab
         COMMAND bash ${_hg_tdir}/lab_test.sh "${_hg_viewer_exe}"
                 $<TARGET_FILE:viewer_png_check> ${CMAKE_CURRENT_BINARY_DIR}/viewer_lab)
set_tests_properties(viewer_lab PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 240)
