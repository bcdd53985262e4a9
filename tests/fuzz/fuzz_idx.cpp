// Fuzz target: the IDX reader, raw or gzipped (datasets/idx.h, datasets/bytes.h).
#include <stdexcept>

#include "datasets/bytes.h"
#include "datasets/idx.h"
#include "tests/fuzz/fuzz_target.h"

bool hg_fuzz_one(const uint8_t* data, size_t size, const std::string& name, std::string& error) {
  try {
    if (hg::data::is_gzip(data, size)) {
      // Cap the output: a tiny input must not make the fuzzer spend its time allocating.
      const hg::data::Bytes raw = hg::data::gunzip(data, size, name, size_t(64) << 20);
      hg::data::parse_idx(raw.data(), raw.size(), name);
    } else {
      hg::data::parse_idx(data, size, name);
    }
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
