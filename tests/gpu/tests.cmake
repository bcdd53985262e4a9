# tests/gpu/run.sh's own flow (the deadline, the CUDA_LAUNCH_BLOCKING reruns, the output files,
# the chapters' run names), checked on the CPU with stub programs: no GPU, no build, seconds.
# (Included by tests/CMakeLists.txt. The GPU test binaries themselves are registered there.)
add_test(NAME gpu_run_sh_flow COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/test_run_flow.sh)
set_tests_properties(gpu_run_sh_flow PROPERTIES LABELS "script")

# The FP8 kernels' images for sm_89 and sm_90 in hg_cuda (cuda/CMakeLists.txt), listed by
# cuda/tools/fatbin_images: a CPU test of what nvcc built, no GPU needed.
if(HG_WITH_CUDA)
  string(REPLACE ";" "," _hg_archs "${CMAKE_CUDA_ARCHITECTURES}")
  add_test(NAME fp8_images_sm89_sm90 COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/fp8_images.sh
           $<TARGET_FILE:fatbin_images> $<TARGET_FILE:hg_cuda> ${_hg_archs})
  set_tests_properties(fp8_images_sm89_sm90 PROPERTIES LABELS "script")
endif()
