# Chapter 04: the program's bad-input behaviour. (The graders are tested in tests/exercises/.)
# (Included by tests/CMakeLists.txt; the targets come from lessons/CMakeLists.txt.)
if(TARGET lesson_04)
  set(_hg_expect ${CMAKE_CURRENT_LIST_DIR}/expect_error.sh)
  # Not a number, and an unknown format: one line saying what was expected, exit code 2.
  add_test(NAME lesson_04_bad_value_exits_2
           COMMAND sh ${_hg_expect} 2 "--value 'abc' is not a number; expected a decimal like"
                   $<TARGET_FILE:lesson_04> --value abc)
  add_test(NAME lesson_04_bad_format_exits_2
           COMMAND sh ${_hg_expect} 2 "unknown --format 'xyz'; expected one of fp32, tf32, fp16, bf16, e4m3, e5m2"
                   $<TARGET_FILE:lesson_04> --format xyz)
  add_test(NAME lesson_04_bad_flag_exits_2
           COMMAND sh ${_hg_expect} 2 "lesson 04:" $<TARGET_FILE:lesson_04> --frobnicate)
  add_test(NAME lesson_04_runs COMMAND lesson_04)
  set_tests_properties(lesson_04_bad_value_exits_2 lesson_04_bad_format_exits_2
                       lesson_04_bad_flag_exits_2 lesson_04_runs PROPERTIES LABELS "lesson")
  set_tests_properties(lesson_04_runs PROPERTIES PASS_REGULAR_EXPRESSION "65520 becomes inf in FP16")
endif()

# Every chapter program exits 2 on a command-line error (an unknown flag; for the training
# chapters also a --resume file that does not exist), whatever kind of error CLI11 saw.
foreach(nn 01 02 03 04 05 06 07 08 09 10 11)
  if(TARGET lesson_${nn})
    add_test(NAME lesson_${nn}_unknown_flag_exits_2
             COMMAND sh -c "\"$0\" --no-such-flag >/dev/null 2>&1; rc=$?; echo \"exit code $rc\"; test $rc -eq 2"
                     $<TARGET_FILE:lesson_${nn}>)
    set_tests_properties(lesson_${nn}_unknown_flag_exits_2 PROPERTIES LABELS "lesson")
  endif()
endforeach()
# The READMEs' `./lab lesson` commands, as written, run one after the other in a fresh folder:
# no two write the same run folder, none fails. The default run skips the long ones (the
# SmallCNN trainings of chapters 02 and 10, chapter 02's five epochs on all 60000 images,
# chapter 12's four GPT trainings, chapter 13 on 4 ranks, chapter 14's every section) and
# runs the other 20: about 15 s for 01-11, and for chapter 13 on 2 ranks and chapter 14's
# short run 5 s more on 2 quiet cores, 13-30 s at load average 8-10. The test labelled
# "long", which ./lab test leaves out (ctest -L long runs it), runs every one of them: about
# 10 minutes on 2 cores (12-14 alone: 6 minutes on quiet cores, 10 at load average 10).
set(_hg_readmes "")
foreach(nn 01 02 03 04 05 06 07 08 09 10 11 12 13 14)
  file(GLOB _hg_dir LIST_DIRECTORIES true ${CMAKE_SOURCE_DIR}/lessons/${nn}_*)
  # Chapter 13's commands start mpirun: built without MPI, its program is a stub.
  if(_hg_dir AND TARGET lesson_${nn} AND (HG_WITH_MPI OR NOT nn STREQUAL "13"))
    list(APPEND _hg_readmes ${_hg_dir}/README.md)
  endif()
endforeach()
if(_hg_readmes)
  set(_hg_readme_run bash ${CMAKE_CURRENT_LIST_DIR}/readme_commands.sh ${CMAKE_SOURCE_DIR}/lab ${CMAKE_BINARY_DIR}
                     ${CMAKE_SOURCE_DIR}/lessons)
  add_test(NAME lessons_readme_commands_run_in_order
           COMMAND ${_hg_readme_run} --skip "--model (mlp,)?smallcnn|^\\./lab lesson 02$|^\\./lab lesson 12|--ranks 4|--run-name 14_readme$" ${_hg_readmes})
  add_test(NAME lessons_readme_commands_run_in_order_all COMMAND ${_hg_readme_run} ${_hg_readmes})
  set_tests_properties(lessons_readme_commands_run_in_order PROPERTIES LABELS "lesson")
  set_tests_properties(lessons_readme_commands_run_in_order_all PROPERTIES LABELS "lesson;long" TIMEOUT 3600)
endif()

# Every chapter program that runs OpenMP threads sets their wait policy itself, so that one
# started directly is as fast as through ./lab (chapters 03 and 04's programs have none).
set(_hg_programs "")
foreach(nn 01 02 05 06 07 08 09 10 11 12 13 14)
  if(TARGET lesson_${nn})
    list(APPEND _hg_programs $<TARGET_FILE:lesson_${nn}>)
  endif()
endforeach()
if(_hg_programs)
  add_test(NAME lessons_set_their_omp_wait_policy
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/wait_policy.sh ${_hg_programs})
  set_tests_properties(lessons_set_their_omp_wait_policy PROPERTIES LABELS "lesson")
endif()
foreach(nn 02)
  if(TARGET lesson_${nn})
    add_test(NAME lesson_${nn}_missing_resume_file_exits_2
             COMMAND sh -c "\"$0\" --resume /nonexistent/halfgrad.ckpt >/dev/null 2>&1; rc=$?; echo \"exit code $rc\"; test $rc -eq 2"
                     $<TARGET_FILE:lesson_${nn}>)
    set_tests_properties(lesson_${nn}_missing_resume_file_exits_2 PROPERTIES LABELS "lesson")
  endif()
endforeach()

# What the chapters state, printed by the command they name (tests/lessons/fact.sh: the text
# must appear in the program's output and in the README; an -x text in neither).
set(_hg_fact ${CMAKE_CURRENT_LIST_DIR}/fact.sh)
set(_hg_lessons ${CMAKE_SOURCE_DIR}/lessons)
function(hg_fact name)
  add_test(NAME fact_${name} COMMAND sh ${_hg_fact} ${ARGN})
  set_tests_properties(fact_${name} PROPERTIES LABELS "lesson;fact" WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
endfunction()
if(TARGET lesson_01)
  # The sweep of h the README pastes: smallest error at 1e-5, larger both ways.
  hg_fact(01_h_sweep ${_hg_lessons}/01_tensors_autograd/README.md
          -e "1e-4  finite diff.: 2.362e-09" -e "1e-5  finite diff.: 2.172e-11" -e "1e-6  finite diff.: 3.934e-11"
          -x "h = 1e-6 balances" -- sh ${CMAKE_CURRENT_LIST_DIR}/h_sweep_01.sh $<TARGET_FILE:lesson_01>)
  # A large h is truncation error, not a bug in a backward: the verdict says which.
  hg_fact(01_large_h_is_truncation ${_hg_lessons}/01_tensors_autograd/README.md -c 1
          -e "within their own truncation error" -x "(a bug in an op's backward?)"
          -- $<TARGET_FILE:lesson_01> --h 1e-2)
endif()
# Chapters 06 and 07: an update vanishes below half an F16 ULP of the weight (no fixed 2^-18);
# F16 rounds gradients of at most 2^-25 to 0 (round to nearest, not a flush-to-zero mode).
foreach(_hg_ch 06_fp16_naive 07_master_weights)
  string(SUBSTRING ${_hg_ch} 0 2 _hg_nn)
  if(TARGET lesson_${_hg_nn})
    hg_fact(${_hg_nn}_vanishing_update_bound ${_hg_lessons}/${_hg_ch}/README.md
            -e "lr*g = 5e-06 < half an F16 ULP at the weight, 2^-17 = 7.63e-06: the weight does not move"
            -e "(in F16 those up to 2^-25 round to 0, the others up to 2^-24)"
            -x "2^-18" -x "flush" -x "they become 0"
            -- $<TARGET_FILE:lesson_${_hg_nn}> --limit-train 256 --limit-test 100 --epochs 1
               --run-name fact_${_hg_nn} --overwrite --stats-every 0 --threads 1)
  endif()
endforeach()
if(TARGET lesson_06)
  hg_fact(06_underflow_threshold ${_hg_lessons}/06_fp16_naive/README.md
          -e "gradient 2e-8   -> 0          (at most 2^-25 = 2.98e-08, half of F16's smallest subnormal: rounds to 0)"
          -e "gradient 4e-8   -> 5.96046e-08 (above 2^-25: rounds up to the smallest subnormal, 2^-24)"
          -- $<TARGET_FILE:lesson_06> --only fp16 --limit-train 128 --limit-test 100 --epochs 1
             --run-name fact_06u --overwrite --stats-every 0 --threads 1)
endif()
# Chapter 08: a run whose gradients are all inf/NaN has no median (not the histogram's floor, -40).
if(TARGET lesson_08)
  hg_fact(08_no_median_without_finite_gradients ${_hg_lessons}/08_loss_scaling/README.md -c 3
          -e "median none: no logged gradient value was finite and non-zero"
          -e "static_scale    1.04858e+06 1.04858e+06            none" -x " -40 " -x "flush"
          -- $<TARGET_FILE:lesson_08> --limit-train 256 --limit-test 100 --epochs 1 --runs static_scale
             --loss-scale 1048576 --run-name fact_08 --overwrite --threads 1)
endif()
# Chapter 11: a run without a GradScaler shows no skips and no scale ("-", not 0); the
# setting the README shows where F16 AMP skips steps and BF16 trains; what a GPU does with
# BF16 and TF32.
if(TARGET lesson_11)
  hg_fact(11_no_scaler_no_scale ${_hg_lessons}/11_bfloat16/README.md
          -e "skipped, last scale: amp_f16's GradScaler" -e "-: no scaler (BF16 has F32's range, FP32 needs none)"
          -e "0.60 MB        -           -"
          -e "F32 stays F32 unless --tf32 puts it on TF32 tensor"
          -e "F16 and BF16 are emulated in software (widened to F32 on the avx2+fma kernel)"
          -r "F16 and BF16 matmuls and convolutions run on the WMMA tensor-core kernels"
          -- $<TARGET_FILE:lesson_11> --limit-train 256 --limit-test 100 --epochs 1 --run-name fact_11
             --overwrite --stats-every 0 --threads 1)
  hg_fact(11_bf16_trains_where_f16_skips ${_hg_lessons}/11_bfloat16/README.md
          -e "amp_f16  epoch 1  loss 0.8201  test accuracy 0.5535  macro F1 0.5258"
          -e "amp_bf16 epoch 1  loss 0.5958  test accuracy 0.5905  macro F1 0.5580"
          -e "0.60 MB        7         512"
          -- $<TARGET_FILE:lesson_11> --limit-train 5000 --limit-test 2000 --epochs 1 --runs amp_f16,amp_bf16
             --input-scale 200 --lr 0.001 --run-name fact_11_x200 --overwrite --stats-every 0)
  # Both on the F32 kernels (BF16 widened: the same bits on every CPU of the project); a CPU's
  # BF16 unit adds in its own order (chapter 05, section 7), and its digits differ.
  set_tests_properties(fact_11_no_scaler_no_scale fact_11_bf16_trains_where_f16_skips
                       PROPERTIES ENVIRONMENT HG_GEMM_KERNEL=avx2)
endif()
# Chapter 12: the memory table the run ends with, where the activations are (13 MiB a block,
# the rest outside the blocks; the formula without dropout), and a --plan whose shape is the
# model its Ψ counts (the layers of GPT-3's width would hold 4.35e10 parameters: refused).
if(TARGET lesson_12)
  hg_fact(12_memory_table ${_hg_lessons}/12_memory_and_scale/README.md
          -e "memory on cpu: peak 78.87 MiB" -e "activations          53.97 MiB   53.97 MiB         0 B"
          -e "total                78.87 MiB           -   12.45 MiB" -x "still being measured"
          -- $<TARGET_FILE:lesson_12> --steps 2 --warmup 1 --eval-every 2 --eval-batches 1 --sample-chars 1
             --peak-gflops 1 --threads 2 --run-name fact_12 --overwrite)
  hg_fact(12_activations_per_block ${_hg_lessons}/12_memory_and_scale/README.md
          -e "      4     53.97 MiB    16.47 MiB   0.31" -e "      8    105.97 MiB    18.47 MiB   0.17"
          -r "13.00 MiB a block" -r "2·sbh(32 + 2as/h) = 9.0 MiB" -x "the embeddings' output, the final"
          -- $<TARGET_FILE:lesson_12> --recompute-table --depths 4 8 --table-steps 1 --threads 2)
  hg_fact(12_plan_shape_is_the_model ${_hg_lessons}/12_memory_and_scale/README.md
          -e "activations: 36 layers · sbh(34 + 5as/h), s = 2048, b = 1, h = 4096, a = 32: 34.4 GB per rank"
          -x "--hidden 12288"
          -- $<TARGET_FILE:lesson_12> --plan --params 7.5e9 --ranks 64 --layers 36 --hidden 4096 --heads 32
             --seq 2048 --batch 1)
endif()
# Chapter 14: the table's legend says what the program does to an underflowing gradient
# (flushed to 0), and the README states the FP8 runs' slowdown per machine, not one range.
if(TARGET lesson_14)
  hg_fact(14_dy_underflow_is_flushed ${_hg_lessons}/14_fp8/README.md
          -e "gradient's non-zero values that its E5M2 (HYBRID) cast flushed to 0, over all steps and layers."
          -x "cast rounded to 0" -x "4–9× slower than BF16 here"
          -- $<TARGET_FILE:lesson_14> --sections train --runs bf16,delayed --limit-train 256 --limit-test 100
             --threads 1 --run-name fact_14 --overwrite)
endif()
# Chapter 05: what the GPU does with BF16 and TF32 (the GPU part itself needs a CUDA build).
if(TARGET lesson_05)
  hg_fact(05_gpu_bf16_tf32 ${_hg_lessons}/05_tensor_cores/README.md
          -e "TF32  16x16x8   exact products: 2048 of 2048"
          -r "The engine runs F32 matmuls and convolutions on TF32 tensor cores only when"
          -r "the engine then runs BF16 matmuls in F32"
          -- $<TARGET_FILE:lesson_05>)
endif()

# ./lab lesson's OpenMP wait policy and where ./lab screenshots writes (stub programs).
add_test(NAME lab_lesson_policy_and_screenshot_folder
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/lab_first_hour.sh ${CMAKE_SOURCE_DIR})
# ./lab keeps the configured build options, refuses bad ones and bad view/bench arguments
# before building, and works through a symbolic link (stub programs, a fake cmake).
add_test(NAME lab_options_and_arguments
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/lab_options.sh ${CMAKE_SOURCE_DIR}/lab)
set_tests_properties(lab_lesson_policy_and_screenshot_folder lab_options_and_arguments PROPERTIES LABELS "lesson")

# A chapter's diff against the one before is its lesson: chapter 09 is chapter 08 with a
# GradScaler in place of the static scale (at most 150 lines of diff; the plumbing lives in
# framework/train/). And every chapter's file index lists the sections its code has.
add_test(NAME lesson_diff_08_09_is_the_lesson
         COMMAND sh -c "n=$(diff \"$0/08_loss_scaling/main.cpp\" \"$0/09_dynamic_loss_scaling/main.cpp\" | wc -l); echo \"diff 08 09: $n lines (at most 150)\"; test $n -le 150"
                 ${CMAKE_SOURCE_DIR}/lessons)
add_test(NAME lesson_file_index_matches_sections
         COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/file_index.sh ${CMAKE_SOURCE_DIR}/lessons)
# The budgets of DESIGN.md ("Chapters and measurements"): a chapter README at most 450 lines,
# the top README 250, a chapter's main.cpp 600, no function in lessons/ over 100.
add_test(NAME lessons_within_budgets COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/budgets.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(lesson_diff_08_09_is_the_lesson lesson_file_index_matches_sections lessons_within_budgets
                     PROPERTIES LABELS "lesson")
