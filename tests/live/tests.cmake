# The live lab's tests (included by tests/CMakeLists.txt).
#
# test_live   the live trainer and its control channel (framework/train/live.h,
#             live_control.h), in process on a tiny synthetic set: each command applied and
#             logged, each bad one refused, a script's log the same twice and replayed from
#             the log, a branch continuing its parent bit for bit (momentum and scaler too),
#             a recipe change carrying them, the SmallCNN in every recipe, the FP8 recipes
#             and a switch into FP8 and back, chapter 12's GPT on a tiny text; --device
#             cuda refused without a GPU; and halfgrad-live killed
#             mid-run leaving a folder that reads whole (FashionMNIST, 512 images); the demo
#             scripts of docs/demos/ load.
add_executable(test_live ${CMAKE_CURRENT_LIST_DIR}/test_live.cpp)
target_link_libraries(test_live PRIVATE halfgrad hg_doctest_main hg_warnings)
hg_test_O1(test_live)
target_compile_definitions(test_live PRIVATE HG_LIVE_EXE="$<TARGET_FILE:halfgrad-live>"
                                            HG_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
add_dependencies(test_live halfgrad-live)
doctest_discover_tests(test_live PROPERTIES SKIP_RETURN_CODE 77 ENVIRONMENT OMP_WAIT_POLICY=PASSIVE)
