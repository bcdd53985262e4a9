#pragma once
// The IDX file format (LeCun's MNIST format, also used by FashionMNIST).
//
//   offset 0   2 bytes   zero
//   offset 2   1 byte    element type: 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64
//   offset 3   1 byte    number of dimensions D (1..)
//   offset 4   4·D bytes each dimension as a big-endian uint32
//   offset 4+4D          the elements, row-major, big-endian, exactly prod(dims) of them
//
// A file may be raw or gzip-compressed; the reader detects gzip by its magic bytes (1f 8b),
// not by the file name. Offsets in error messages count bytes of the *decompressed* stream,
// and the file is then named "<path> (after gunzip)".
//
// Reading is header first (datasets/bytes.h): the reader reads the 4 + 4·D header bytes,
// checks them against the limits below and against the file's size, and only then
// allocates and reads the elements. So a header that claims more than the file holds, or
// more than any dataset here needs, costs neither memory nor time:
//   raw file   the size must be exactly 4 + 4·D + prod(dims)·element size (known from the
//              file system before a byte of data is read)
//   gzip file  the claim must fit what the compressed size can inflate to (deflate expands
//              at most 1032:1); then at most the claimed bytes are inflated, plus one to
//              see that nothing follows
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datasets/bytes.h"

namespace hg::data {

enum class IdxType : uint8_t { U8 = 0x08, I8 = 0x09, I16 = 0x0B, I32 = 0x0C, F32 = 0x0D, F64 = 0x0E };

// Limits of a header, with room to spare: FashionMNIST's training images are 60000 items of
// 28×28 (47 MB), the largest EMNIST split 697932 items of 28×28 (547 MB).
inline constexpr int64_t kIdxMaxItems = int64_t(1) << 24;         // dims[0]: 16.7 M items
inline constexpr int64_t kIdxMaxItemElements = int64_t(1) << 24;  // prod(dims[1..]): 4096×4096
inline constexpr uint64_t kIdxMaxDataBytes = uint64_t(1) << 30;   // all elements: 1 GiB

size_t idx_element_size(IdxType);
const char* idx_type_name(IdxType);

struct IdxHeader {
  IdxType type = IdxType::U8;
  std::vector<int64_t> dims;   // e.g. (60000, 28, 28) for FashionMNIST training images
  size_t size = 0;             // header bytes, 4 + 4·D: where the elements start
  uint64_t data_bytes = 0;     // prod(dims) · element size

  int64_t numel() const;
  std::string shape() const;   // "60000x28x28"
};

struct IdxArray {
  IdxType type = IdxType::U8;
  std::vector<int64_t> dims;
  Bytes data;                  // prod(dims) elements, converted to host byte order
  size_t data_offset = 0;      // where the elements start in the file (for messages)

  int64_t numel() const;
  size_t element_size() const;
};

// An IDX file opened and its header read and checked; the elements are read by read().
// Every malformed input throws std::runtime_error "<name>: <what> at byte offset N"; a
// header that promises more elements than the data holds ("short data") or fewer
// ("trailing bytes") is an error, never a silently shorter array.
class IdxReader {
 public:
  explicit IdxReader(const std::string& path);
  // Bytes already in memory, raw or gzip; `name` names them in errors.
  IdxReader(const uint8_t* data, size_t size, const std::string& name);

  const IdxHeader& header() const { return header_; }
  // What messages call the contents: the path, or "<path> (after gunzip)".
  const std::string& name() const { return contents_name_; }
  // Allocates header().data_bytes and reads the elements; once.
  IdxArray read();

 private:
  void start(ByteReader& raw, uint64_t size);
  [[noreturn]] void fail(uint64_t offset, const std::string& what) const;

  std::string name_, contents_name_;
  std::unique_ptr<FileReader> file_;
  std::unique_ptr<MemoryReader> memory_;
  std::unique_ptr<GunzipReader> gunzip_;
  ByteReader* in_ = nullptr;  // where the IDX bytes come from: the file, memory, or gunzip
  IdxHeader header_;
  bool read_done_ = false;
};

// IdxReader(...).read() in one call: a file, or bytes in memory (raw or gzip).
IdxArray read_idx(const std::string& path);
IdxArray parse_idx(const uint8_t* data, size_t size, const std::string& name);

}  // namespace hg::data
