// Fuzz target: the checkpoint reader (framework/io/checkpoint.h).
#include <stdexcept>

#include "framework/io/checkpoint.h"
#include "tests/fuzz/fuzz_target.h"

bool hg_fuzz_one(const uint8_t* data, size_t size, const std::string& name, std::string& error) {
  try {
    const hg::io::Checkpoint c = hg::io::decode_checkpoint(data, size, name);
    // Touch what a loader would: every entry's bytes against its shape.
    for (const hg::io::CheckpointEntry& e : c.entries())
      if (size_t(e.numel()) * hg::io::checkpoint_dtype_size(e.dtype) != e.bytes.size()) __builtin_trap();
    return true;
  } catch (const std::runtime_error& e) {
    error = e.what();
    return false;
  }
}

#ifdef HG_LIBFUZZER
#include <zlib.h>

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  hg_fuzz_one(data, size, "fuzz-input", error);
  // Nearly every random mutation breaks the size field or the CRC, so the body parser would
  // rarely be reached. Also try the input with both repaired: total size at offset 8 and a
  // correct CRC-32 appended, so the fuzzer explores the entry parsing behind them.
  if (size >= 16) {
    std::vector<uint8_t> fixed(data, data + size);
    const uint64_t total = size + 4;
    for (int i = 0; i < 8; ++i) fixed[size_t(8 + i)] = uint8_t(total >> (8 * i));
    const uLong crc = crc32(crc32(0L, Z_NULL, 0), fixed.data(), uInt(fixed.size()));
    for (int i = 0; i < 4; ++i) fixed.push_back(uint8_t(crc >> (8 * i)));
    hg_fuzz_one(fixed.data(), fixed.size(), "fuzz-input-repaired", error);
  }
  return 0;
}
#endif
