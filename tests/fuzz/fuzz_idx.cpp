// Fuzz target: the IDX reader, raw or gzipped (datasets/idx.h, datasets/bytes.h).
#include <stdexcept>

#include "datasets/idx.h"
#include "tests/fuzz/fuzz_target.h"

bool hg_fuzz_one(const uint8_t* data, size_t size, const std::string& name, std::string& error) {
  try {
    // The reader that read_idx uses, raw or gzip: its header checks bound what it allocates
    // (at most 1032 times the input for gzip), so a tiny input cannot make it allocate much.
    hg::data::parse_idx(data, size, name);
    return true;
  } catch (const std::runtime_error& e) {
    error = e.what();
    return false;
  }
}

#ifdef HG_LIBFUZZER
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  hg_fuzz_one(data, size, "fuzz-input", error);
  return 0;
}
#endif
