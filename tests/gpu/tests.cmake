# tests/gpu/run.sh's own flow (the deadline, the CUDA_LAUNCH_BLOCKING reruns, the output files,
# the chapters' run names), checked on the CPU with stub programs: no GPU, no build, seconds.
# (Included by tests/CMakeLists.txt. The GPU test binaries themselves are registered there.)
add_test(NAME gpu_run_sh_flow COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_run_flow.sh)
set_tests_properties(gpu_run_sh_flow PROPERTIES LABELS "script")
