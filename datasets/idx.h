#pragma once
// The IDX file format (LeCun's MNIST format, also used by FashionMNIST).
//
//   offset 0   2 bytes   zero
//   offset 2   1 byte    element type: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64
//   offset 3   1 byte    number of dimensions D (1..)
//   offset 4   4·D bytes each dimension as a big-endian uint32
//   offset 4+4D          the elements, row-major, big-endian, exactly prod(dims) of them
//
// A file may be raw or gzip-compressed; read_idx detects gzip by its magic bytes (1f 8b),
// not by the file name. Offsets in error messages count bytes of the *decompressed* stream.
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/bytes.h"

namespace hg::data {

enum class IdxType : uint8_t { U8 = 0x08, I8 = 0x09, I16 = 0x0B, I32 = 0x0C, F32 = 0x0D, F64 = 0x0E };

struct IdxArray {
  IdxType type = IdxType::U8;
  std::vector<int64_t> dims;   // e.g. (60000, 28, 28) for FashionMNIST training images
  Bytes data;                  // prod(dims) elements, converted to host byte order
  size_t data_offset = 0;      // where the elements start in the file (for messages)

  int64_t numel() const;
  size_t element_size() const;
};

size_t idx_element_size(IdxType);
const char* idx_type_name(IdxType);

// Parses IDX bytes already in memory (raw, not gzip). `name` names the file in errors.
// Every malformed input throws std::runtime_error "<name>: <what> at byte offset N";
// a header that promises more elements than the data holds ("short data") or fewer
// ("trailing bytes") is an error, never a silently shorter array.
IdxArray parse_idx(const uint8_t* data, size_t size, const std::string& name);

// Reads a raw or gzipped IDX file.
IdxArray read_idx(const std::string& path);

}  // namespace hg::data
