# FP8 casts against NVIDIA's conversions (tests/fp8/fp8_vs_cuda.cpp). cuda_fp8.h is plain
# host C++, so it is looked for even in a build without CUDA (HG_CUDA=OFF): in the toolkit
# CMake found, else where NVIDIA installs it.
find_path(HG_CUDA_FP8_INCLUDE cuda_fp8.h
          HINTS ${CUDAToolkit_INCLUDE_DIRS} $ENV{CUDA_HOME}/include /usr/local/cuda/include
          NO_CACHE)
add_executable(fp8_vs_cuda ${CMAKE_CURRENT_LIST_DIR}/fp8_vs_cuda.cpp)
target_link_libraries(fp8_vs_cuda PRIVATE halfgrad hg_warnings)
if(HG_CUDA_FP8_INCLUDE)
  target_include_directories(fp8_vs_cuda SYSTEM PRIVATE ${HG_CUDA_FP8_INCLUDE})
  message(STATUS "  FP8 casts vs cuda_fp8.h: yes (${HG_CUDA_FP8_INCLUDE})")
else()
  message(STATUS "  FP8 casts vs cuda_fp8.h: no, header not found (the tests skip)")
endif()
# By default every 1021st float32 pattern at seven scales (seconds); all 2^32 patterns are a
# separate test, skipped unless HG_EXHAUSTIVE=1 (minutes on 2 cores).
add_test(NAME fp8_casts_vs_cuda_strided COMMAND fp8_vs_cuda --stride 1021)
add_test(NAME fp8_casts_vs_cuda_all_inputs COMMAND fp8_vs_cuda --all)
set_tests_properties(fp8_casts_vs_cuda_strided PROPERTIES SKIP_RETURN_CODE 77 LABELS "fp8")
set_tests_properties(fp8_casts_vs_cuda_all_inputs PROPERTIES SKIP_RETURN_CODE 77 LABELS "fp8;exhaustive")
