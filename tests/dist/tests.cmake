# Data parallelism (framework/dist, chapter 13). Included by tests/CMakeLists.txt.
#
#   test_dist_units   doctest, one process: the ring's schedule, the sampler, the buckets, the
#                     pipeline bubble, autograd's grad-ready hook, the scaler's reducer
#   test_dist_mpi     one ctest test per check group, each under `mpiexec -n 2` (label mpi);
#                     fixed_order also at 4 ranks (--oversubscribe: more ranks than cores)
#   lesson_13 ...     the chapter's program under mpiexec: the equality checks, a rank that
#                     fails or is killed, bad flags, the GPT (DP, ZeRO-1, the accountant's bytes),
#                     and the outputs the README pastes (lesson_13_fact_*)
#   test_nccl         (a build with NCCL) world size 1 on one GPU; exits 77 without a GPU; and
#                     at 2 ranks without a GPU, every rank stops when NCCL cannot start
add_executable(test_dist_units ${CMAKE_CURRENT_LIST_DIR}/test_dist_units.cpp)
target_link_libraries(test_dist_units PRIVATE halfgrad hg_doctest_main hg_warnings)
hg_test_O1(test_dist_units)
doctest_discover_tests(test_dist_units PROPERTIES LABELS "dist")

if(HG_WITH_MPI)
  add_executable(test_dist_mpi ${CMAKE_CURRENT_LIST_DIR}/test_dist_mpi.cpp)
  target_link_libraries(test_dist_mpi PRIVATE halfgrad hg_warnings)
  hg_test_O1(test_dist_mpi)
  # mpirun refuses to run as root unless told twice; ranks that wait yield the core (ctest
  # runs tests side by side on 2 cores); no binding, so two jobs do not pin to the same core.
  set(HG_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
                      OMP_NUM_THREADS=1)
  set(HG_MPIEXEC ${MPIEXEC_EXECUTABLE} --oversubscribe --bind-to none)
  string(REPLACE ";" " " HG_MPIEXEC_LINE "${HG_MPIEXEC}")
  foreach(t collectives errors ring sampler broadcast dp_equals_one_process no_sync zero1_equals_dp
            scaler_agrees tensor_parallel fixed_order gpt_dp_equals_one_process gpt_zero1_equals_dp
            grads_are_bucket_views)
    add_test(NAME mpi_${t} COMMAND ${HG_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:test_dist_mpi> ${t})
    set_tests_properties(mpi_${t} PROPERTIES LABELS "mpi" TIMEOUT 120 ENVIRONMENT "${HG_MPI_TEST_ENV}"
                         PASS_REGULAR_EXPRESSION "${t}: all checks passed" FAIL_REGULAR_EXPRESSION "NOT OK")
  endforeach()
  add_test(NAME mpi_fixed_order_4_ranks
           COMMAND ${HG_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 4 $<TARGET_FILE:test_dist_mpi> fixed_order)
  set_tests_properties(mpi_fixed_order_4_ranks PROPERTIES LABELS "mpi" TIMEOUT 180 ENVIRONMENT "${HG_MPI_TEST_ENV}"
                       PASS_REGULAR_EXPRESSION "fixed_order: all checks passed" FAIL_REGULAR_EXPRESSION "NOT OK")
endif()

# The chapter's program (FashionMNIST, as the other chapters' tests). rank_order holds its
# --deterministic checkpoints against rank_order_reference, one process without a communicator.
if(HG_WITH_MPI AND TARGET lesson_13)
  add_executable(rank_order_reference ${CMAKE_CURRENT_LIST_DIR}/rank_order_reference.cpp)
  target_link_libraries(rank_order_reference PRIVATE halfgrad CLI11::CLI11 hg_warnings)
  foreach(case checks killed throws folders diverges bad_data gpt rank_order flags_differ)
    add_test(NAME lesson_13_${case}
             COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/lesson_13.sh ${case} "${HG_MPIEXEC_LINE}" $<TARGET_FILE:lesson_13>
                     ${CMAKE_BINARY_DIR}/tests/dist/lesson_13_${case} $<TARGET_FILE:rank_order_reference>)
    set_tests_properties(lesson_13_${case} PROPERTIES LABELS "mpi;lesson" TIMEOUT 180
                         ENVIRONMENT "${HG_MPI_TEST_ENV}" PASS_REGULAR_EXPRESSION "lesson_13.sh ${case}: ok")
  endforeach()
  # The outputs the README pastes are what the program prints: their lines that carry no time
  # (tests/lessons/fact.sh: each TEXT in the output and in the README).
  # lesson_13_fact(NAME RANKS TEXTS text... FLAGS flag... [NEVER text...]): `mpiexec -n RANKS
  # lesson_13 FLAGS`; a NEVER text may appear in neither the output nor the README.
  function(lesson_13_fact name ranks)
    cmake_parse_arguments(F "" "" "TEXTS;FLAGS;NEVER" ${ARGN})
    set(expect "")
    foreach(t ${F_TEXTS})
      list(APPEND expect -e "${t}")
    endforeach()
    foreach(t ${F_NEVER})
      list(APPEND expect -x "${t}")
    endforeach()
    file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/tests/dist/lesson_13_fact_${name})
    add_test(NAME lesson_13_fact_${name}
             COMMAND sh ${PROJECT_SOURCE_DIR}/tests/lessons/fact.sh ${PROJECT_SOURCE_DIR}/lessons/13_data_parallel/README.md
                     ${expect} -- ${HG_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} ${ranks} $<TARGET_FILE:lesson_13> ${F_FLAGS})
    set_tests_properties(lesson_13_fact_${name} PROPERTIES LABELS "mpi;lesson;fact" TIMEOUT 180
                         ENVIRONMENT "${HG_MPI_TEST_ENV}"
                         WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/tests/dist/lesson_13_fact_${name})
  endfunction()
  # "Run it": `./lab lesson 13 --ranks 2`.
  lesson_13_fact(run_it 2 FLAGS --threads 1 --overwrite TEXTS
    "DP, MPI's allreduce      55655 of 535818 values differ, max |diff| = 1.45e-07 x max |value|"
    "ZeRO-1                   bit-identical (all 535818 values)"
    "epoch 1  loss 0.8939  test accuracy 0.7716"
    "buckets: 2 of 1.0 MiB; 0 allreduce(s) started while backward was running"
    "section 3, ZeRO-1 AdamW: master, m, v       3214908      3214908      3214908   12 ceil(Psi/N)"
    "(an F16 or BF16 model would add DP's F32 master copy: 4 Psi = 2143272 bytes per rank, 12 Psi with m"
    "by rows (inputs split, allreduce of sums): 29260 of 32768 values differ, max |diff| = 6.21e-07 x max |value|"
    "RESULT model=mlp ranks=2 threads=1 precision=fp32 zero=0 steps=79 "
    NEVER "DP's F32 master copy: 12 Psi")
  # Sections 2 and 3 at 4 ranks: the three orders of a sum differ, and so does MPI's
  # allreduce from one process.
  lesson_13_fact(4_ranks 4 FLAGS --threads 1 --overwrite TEXTS
    "ring vs MPI_Allreduce:         271647 of 1048576 values differ, max |diff| = 9.52e-08 x max |value|"
    "rank order vs MPI_Allreduce:   231148 of 1048576 values differ, max |diff| = 9.52e-08 x max |value|"
    "ring vs rank order:            229031 of 1048576 values differ, max |diff| = 9.52e-08 x max |value|"
    "DP, MPI's allreduce      41228 of 535818 values differ, max |diff| = 1.45e-07 x max |value|"
    "DP, MPI's allreduce      55601 of 535818 values differ, max |diff| = 1.45e-07 x max |value|"
    NEVER "N times the buffer")
  # Section 3's SmallCNN (8 s on 2 cores): bit-identical in rank order, and the 8th step's jump.
  lesson_13_fact(smallcnn 2 FLAGS --model smallcnn --threads 1 --overwrite TEXTS
    "DP, MPI's allreduce      bit-identical (all 421642 values)"
    "DP, rank order           bit-identical (all 421642 values)"
    "DP, MPI's allreduce      52525 of 421642 values differ, max |diff| = 1.25e-05 x max |value|"
    "ZeRO-1                   bit-identical (all 421642 values)")
  # Section 9's GPT (the fortunes corpus, 300 steps: about 10 s on 2 cores). The section 5
  # line: DP's F32 master copy of an F16 model is 4 Psi (12 Psi is m, v and the copy).
  lesson_13_fact(gpt 2 FLAGS --model gpt --threads 1 --overwrite TEXTS
    "     300       2.4736     0.0002"
    "validation loss 2.4877 nats/char over 8 batches of 16 (chapter 12's); unigram 3.3756, uniform ln V 4.7274"
    "buckets: 2 of 1.0 MiB; 300 allreduce(s) started while backward was running"
    "section 3, ZeRO-1 AdamW: master, m, v       2516736      2516736      2516736   12 ceil(Psi/N)"
    "(an F16 or BF16 model would add DP's F32 master copy: 4 Psi = 1677824 bytes per rank, 12 Psi with m"
    "by rows (inputs split, allreduce of sums): 26686 of 32768 values differ, max |diff| = 4.29e-07 x max |value|")
  # One rank, started without mpirun (MPI's singleton mode); bad flags are one line and exit 2.
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/tests/dist/lesson_13_one_rank)
  add_test(NAME lesson_13_one_rank_without_mpirun
           COMMAND lesson_13 --limit-train 256 --limit-test 100 --ring-mb 0.1 --check-steps 2 --threads 1 --overwrite)
  set_tests_properties(lesson_13_one_rank_without_mpirun PROPERTIES LABELS "lesson" TIMEOUT 120
                       WORKING_DIRECTORY ${CMAKE_BINARY_DIR}/tests/dist/lesson_13_one_rank
                       PASS_REGULAR_EXPRESSION "RESULT model=mlp ranks=1 ")
  add_test(NAME lesson_13_unknown_flag_exits_2
           COMMAND sh -c "\"$0\" --no-such-flag >/dev/null 2>&1; rc=$?; echo \"exit code $rc\"; test $rc -eq 2"
                   $<TARGET_FILE:lesson_13>)
  set_tests_properties(lesson_13_unknown_flag_exits_2 PROPERTIES LABELS "lesson")
endif()

# NCCL at world size 1 (a CUDA build with NCCL): exits 77, reported as skipped, without a GPU.
if(HG_WITH_NCCL)
  add_executable(test_nccl ${CMAKE_CURRENT_LIST_DIR}/test_nccl.cpp)
  target_link_libraries(test_nccl PRIVATE halfgrad hg_warnings)
  hg_test_O1(test_nccl)
  add_test(NAME test_nccl COMMAND test_nccl)
  set_tests_properties(test_nccl PROPERTIES SKIP_RETURN_CODE 77 LABELS "gpu;mpi" TIMEOUT 120
                       ENVIRONMENT "${HG_MPI_TEST_ENV}" FAIL_REGULAR_EXPRESSION "NOT OK")
  # When NCCL cannot start on some rank, every rank stops with a message; none waits for the
  # others (2 ranks on the CPU machine: both fail, each names the other).
  add_test(NAME test_nccl_start_fails_on_every_rank
           COMMAND ${HG_MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:test_nccl> start_fails)
  set_tests_properties(test_nccl_start_fails_on_every_rank PROPERTIES SKIP_RETURN_CODE 77 LABELS "mpi" TIMEOUT 60
                       ENVIRONMENT "${HG_MPI_TEST_ENV}" PASS_REGULAR_EXPRESSION "start_fails: all checks passed"
                       FAIL_REGULAR_EXPRESSION "NOT OK")
endif()

# ./lab lesson 13 --ranks N: the launcher's flags, and mpirun started by the lab itself.
if(HG_WITH_MPI AND TARGET lesson_13)
  add_test(NAME lab_lesson_13_ranks
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/lab_ranks.sh ${PROJECT_SOURCE_DIR}/lab ${CMAKE_BINARY_DIR}
                   ${CMAKE_BINARY_DIR}/tests/dist/lab_ranks)
  set_tests_properties(lab_lesson_13_ranks PROPERTIES LABELS "mpi;lesson" TIMEOUT 180
                       ENVIRONMENT "OMPI_MCA_mpi_yield_when_idle=1;OMP_NUM_THREADS=1"
                       PASS_REGULAR_EXPRESSION "lab_ranks.sh: ok")
endif()
