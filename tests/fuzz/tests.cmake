# Fuzzing the readers that take untrusted bytes: IDX files (datasets/) and checkpoints
# (framework/io/). Each target is one .cpp defining hg_fuzz_one() (tests/fuzz/fuzz_target.h).
#
#   fuzz_replay_<t>  any compiler: replays the committed corpus tests/fuzz/corpus/<t>/
#                    (crafted good and bad files) — registered with ctest.
#   fuzz_<t>         clang only: a libFuzzer binary with AddressSanitizer and UBSan.
#                    tests/fuzz/run.sh makes a separate clang build and runs each for N s.
#
# The targets compile the reader sources directly (not the whole halfgrad library), so a
# clang build of the fuzzers needs nothing else of the framework to build.
set(HG_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(HG_FUZZ_SOURCES_idx ${PROJECT_SOURCE_DIR}/datasets/bytes.cpp ${PROJECT_SOURCE_DIR}/datasets/idx.cpp)
set(HG_FUZZ_SOURCES_checkpoint ${PROJECT_SOURCE_DIR}/datasets/bytes.cpp ${PROJECT_SOURCE_DIR}/framework/io/checkpoint.cpp
                               ${PROJECT_SOURCE_DIR}/framework/io/atomic_file.cpp)

foreach(t idx checkpoint)
  add_executable(fuzz_replay_${t} ${HG_FUZZ_DIR}/fuzz_${t}.cpp ${HG_FUZZ_DIR}/replay_main.cpp ${HG_FUZZ_SOURCES_${t}})
  target_include_directories(fuzz_replay_${t} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(fuzz_replay_${t} PRIVATE fmt::fmt ZLIB::ZLIB nlohmann_json::nlohmann_json hg_warnings)
  add_test(NAME fuzz_replay_${t} COMMAND fuzz_replay_${t} ${HG_FUZZ_DIR}/corpus/${t})

  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    add_executable(fuzz_${t} ${HG_FUZZ_DIR}/fuzz_${t}.cpp ${HG_FUZZ_SOURCES_${t}})
    target_include_directories(fuzz_${t} PRIVATE ${PROJECT_SOURCE_DIR})
    target_compile_definitions(fuzz_${t} PRIVATE HG_LIBFUZZER=1)
    target_compile_options(fuzz_${t} PRIVATE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
    target_link_options(fuzz_${t} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(fuzz_${t} PRIVATE fmt::fmt ZLIB::ZLIB nlohmann_json::nlohmann_json)
  endif()
endforeach()
