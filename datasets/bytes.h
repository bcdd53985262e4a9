#pragma once
// Reading bytes front to back, a piece at a time: from a file, from memory, or inflated from
// a gzip stream over either.
//
//   FileReader    a regular file; a folder, a named pipe (FIFO) or a device is refused when
//                 it is opened (reading a FIFO would wait forever, /dev/zero never ends)
//   MemoryReader  bytes already in memory (tests, the fuzz targets)
//   GunzipReader  the gzip stream another reader yields, inflated by zlib
//
// Why pieces: every reader in datasets/ reads a file's few header bytes first and decides
// from them and the file's size whether the file can be what it claims; only then does it
// allocate what the header promises. A 6 GiB file or a gzip bomb is refused before it costs
// memory or time. Errors are std::runtime_error whose message names the file and, for bad
// contents, the byte offset where the problem was found.
#include <zlib.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hg::data {

using Bytes = std::vector<uint8_t>;

class ByteReader {
 public:
  virtual ~ByteReader() = default;
  // Up to n bytes into dst; returns how many. Fewer than n only at the end of the data.
  virtual size_t read(uint8_t* dst, size_t n) = 0;
};

class FileReader final : public ByteReader {
 public:
  // Throws "cannot open <path>: <reason>", or "<path> is a folder, not a file" (a named
  // pipe, a device, a socket likewise). `what` ("checkpoint") goes before the path.
  explicit FileReader(const std::string& path, const std::string& what = "");
  ~FileReader() override;
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  size_t read(uint8_t* dst, size_t n) override;
  uint64_t size() const { return size_; }  // the file's size when it was opened
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

class MemoryReader final : public ByteReader {
 public:
  MemoryReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t read(uint8_t* dst, size_t n) override;

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

// True when the data starts with the gzip magic bytes 1f 8b.
bool is_gzip(const uint8_t* data, size_t size);

// Deflate cannot expand data by more than 1032:1 (a 258-byte match costs at least 2 bits),
// so `n` compressed bytes never inflate to more than 1032·n: a header that claims more is
// refused before anything is inflated.
inline constexpr uint64_t kDeflateMaxRatio = 1032;

// Inflates the gzip data `in` yields: `in_size` bytes in all, of which the caller has
// already read the first `prefix_size` (to see the magic bytes) and passes them back here.
// Several gzip members one after another (`cat a.gz b.gz`) inflate to their concatenation;
// other bytes after the end of the data are an error. Errors name `name`:
//   "<name>: bad gzip data at compressed byte offset N: <zlib's reason>"
//   "<name>: gzip data ends early at compressed byte offset N (file truncated?)"
//   "<name>: K unexpected bytes after the end of the gzip data at compressed byte offset N"
class GunzipReader final : public ByteReader {
 public:
  GunzipReader(ByteReader& in, uint64_t in_size, std::string name, const uint8_t* prefix = nullptr,
               size_t prefix_size = 0);
  ~GunzipReader() override;
  GunzipReader(const GunzipReader&) = delete;
  GunzipReader& operator=(const GunzipReader&) = delete;

  size_t read(uint8_t* dst, size_t n) override;

 private:
  bool refill();             // more compressed bytes into the buffer; false at the end
  void after_member_end();   // at a member's end: the next member, the end, or junk
  uint64_t consumed() const { return taken_ - zs_.avail_in; }  // compressed bytes used

  ByteReader& in_;
  uint64_t in_size_;
  std::string name_;
  Bytes buf_;                // compressed bytes read from `in_`, not yet inflated
  uint64_t taken_ = 0;       // compressed bytes moved into buf_ so far
  z_stream zs_{};
  bool done_ = false;
};

// Reads until n bytes or the end of the data; returns how many were read.
size_t read_up_to(ByteReader& r, uint8_t* dst, size_t n);

// The whole (small) file, through FileReader: for tests and tools, not for datasets, which
// read through the readers above.
Bytes read_file(const std::string& path, const std::string& what = "");

}  // namespace hg::data
