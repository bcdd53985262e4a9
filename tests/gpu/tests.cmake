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

# cuBLAS is opened on demand (cuda/gemm/cublas_on_demand.h): loading it costs a program about
# 0.4 s of CPU at every start, so the chapter programs and the unit tests link the CUDA runtime
# and never cuBLAS. A CPU test of the ELF files' NEEDED entries.
if(HG_WITH_CUDA AND TARGET lesson_06 AND TARGET lesson_12 AND TARGET test_ops)
  add_test(NAME programs_do_not_link_cublas COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/no_cublas.sh
           $<TARGET_FILE:lesson_06> $<TARGET_FILE:lesson_12> $<TARGET_FILE:test_ops>)
  set_tests_properties(programs_do_not_link_cublas PROPERTIES LABELS "script")
endif()

# What nvcc makes of rungs 08 and 09, read without a GPU (tests/gpu/kernel_facts.sh): rung 08's
# registers (two blocks per SM), rung 09's tensor-core instructions on sm_89 (FP8) and sm_90 (F16
# after unpacking). Compiles the two files for four targets: a few seconds. Chapters 05 and 14
# paste its lines (tests/lessons/fact.sh): the first test checks chapter 05's and keeps the
# output for the second, which checks chapter 14's.
if(HG_WITH_CUDA)
  set(_hg_facts ${CMAKE_BINARY_DIR}/tests/gpu_kernel_facts.txt)
  set(_hg_fp8_sm89 "  sm_89  E4M3·E4M3   QMMA (FP8 MMA)  5   HMMA (F16 MMA)  0   F2FP (FP8 -> F16)  0")
  set(_hg_fp8_sm90 "  sm_90  E4M3·E4M3   QMMA (FP8 MMA)  0   HMMA (F16 MMA) 10   F2FP (FP8 -> F16) 60")
  add_test(NAME gpu_kernel_facts
           COMMAND sh ${PROJECT_SOURCE_DIR}/tests/lessons/fact.sh ${PROJECT_SOURCE_DIR}/lessons/05_tensor_cores/README.md
                   -e "  sm_80   TF32 128 (spills 12 bytes)  BF16 128  F16 126"
                   -e "  sm_90   TF32 128 (spills 12 bytes)  BF16 128  F16 128"
                   -e "${_hg_fp8_sm89}" -e "${_hg_fp8_sm90}"
                   -- bash -o pipefail -c "bash \"$0\" \"$1\" \"$2\" | tee \"$3\""
                   ${CMAKE_CURRENT_LIST_DIR}/kernel_facts.sh ${CMAKE_CUDA_COMPILER} ${PROJECT_SOURCE_DIR} ${_hg_facts})
  set_tests_properties(gpu_kernel_facts PROPERTIES LABELS "script;lesson;fact" FAIL_REGULAR_EXPRESSION "NOT OK"
                       FIXTURES_SETUP hg_kernel_facts)
  add_test(NAME lesson_14_fact_fp8_instructions
           COMMAND sh ${PROJECT_SOURCE_DIR}/tests/lessons/fact.sh ${PROJECT_SOURCE_DIR}/lessons/14_fp8/README.md
                   -e "${_hg_fp8_sm89}" -e "${_hg_fp8_sm90}" -- cat ${_hg_facts})
  set_tests_properties(lesson_14_fact_fp8_instructions PROPERTIES LABELS "lesson;fact" FIXTURES_REQUIRED hg_kernel_facts)
endif()

# The GPU tests again, on a simulated GPU (GPGPU-Sim, tests/gpu/README.md "On a simulated GPU"):
# the same binaries, their kernels run from the embedded PTX for compute_75 (the build keeps
# device code uncompressed for this). Label gpusim; skipped (77) when the simulator is absent.
# HG_GPGPUSIM: the simulator's run script, by default ../shared/gpgpusim/run beside the repository.
if(HG_WITH_CUDA)
  set(HG_GPGPUSIM "${PROJECT_SOURCE_DIR}/../shared/gpgpusim/run" CACHE FILEPATH "GPGPU-Sim's run script (the gpusim tests)")
  # The simulator's cudaMemcpy2D takes one pitch only: this one, preloaded, takes two.
  add_library(hg_gpusim_memcpy2d MODULE ${CMAKE_CURRENT_LIST_DIR}/gpusim_memcpy2d.cpp)
  target_include_directories(hg_gpusim_memcpy2d PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  # Known answers of what the simulator gets wrong and gpusim.sh mends (gpusim_cases.cu):
  # compiled for compute_75 alone, the simulator's target.
  add_executable(gpusim_cases ${CMAKE_CURRENT_LIST_DIR}/gpusim_cases.cu)
  target_link_libraries(gpusim_cases PRIVATE hg_cuda)
  set_target_properties(gpusim_cases PROPERTIES CUDA_ARCHITECTURES 75)
  foreach(name gpusim_cases test_cuda_ops_elementwise test_cuda_ops_nn test_cuda_ops_gpt test_gemm_ladder
               test_cuda_matmul test_cuda_train_step)
    string(REGEX REPLACE "^gpusim_" "" test ${name})
    add_test(NAME gpusim_${test} COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpusim.sh ${HG_GPGPUSIM}
             $<TARGET_FILE:hg_gpusim_memcpy2d> $<TARGET_FILE:${name}>)
    set_tests_properties(gpusim_${test} PROPERTIES SKIP_RETURN_CODE 77 LABELS "gpusim")
  endforeach()
  # The longest of them (about two minutes of one core): started first, so that ctest -j runs
  # the rest of the suite beside it instead of leaving it alone at the end.
  set_tests_properties(gpusim_test_cuda_train_step PROPERTIES COST 120)
endif()
