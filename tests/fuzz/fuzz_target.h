#pragma once
// One fuzz target = one function that feeds bytes to a reader:
//   returns true when the reader accepted the input, false when it refused it with an
//   exception (whose message goes to `error`). Anything else — a crash, a sanitizer report,
//   a hang, an exception of another type escaping — is a bug the fuzzer is looking for.
// LLVMFuzzerTestOneInput (libFuzzer, clang) and replay_main.cpp (any compiler, ctest) both
// call it.
#include <cstddef>
#include <cstdint>
#include <string>

bool hg_fuzz_one(const uint8_t* data, size_t size, const std::string& name, std::string& error);
