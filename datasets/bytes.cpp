#include "datasets/bytes.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace hg::data {

Bytes read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  Bytes out;
  uint8_t chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) out.insert(out.end(), chunk, chunk + got);
  const bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) throw std::runtime_error(fmt::format("cannot read {}: read error", path));
  return out;
}

bool is_gzip(const uint8_t* data, size_t size) {
  return size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
}

Bytes gunzip(const uint8_t* data, size_t size, const std::string& name, size_t max_output) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header and trailer (zlib checks the trailer's CRC32 and size).
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    throw std::runtime_error(fmt::format("{}: zlib could not start inflating", name));
  zs.next_in = const_cast<Bytef*>(data);
  // zlib's counters are 32-bit (uInt); feed the input in pieces so a huge file still works.
  size_t in_left = size;
  Bytes out;
  uint8_t chunk[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.avail_in == 0) {
      if (in_left == 0) break;  // no more input and no end of stream: truncated
      zs.avail_in = uInt(std::min<size_t>(in_left, 1u << 30));
      in_left -= zs.avail_in;
    }
    zs.next_out = chunk;
    zs.avail_out = sizeof chunk;
    rc = inflate(&zs, Z_NO_FLUSH);
    const size_t offset = size - in_left - zs.avail_in;  // compressed bytes consumed so far
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR) {
      std::string why = zs.msg ? zs.msg : "corrupt stream";
      inflateEnd(&zs);
      throw std::runtime_error(
          fmt::format("{}: bad gzip data at compressed byte offset {}: {}", name, offset, why));
    }
    out.insert(out.end(), chunk, chunk + (sizeof chunk - zs.avail_out));
    if (out.size() > max_output) {
      inflateEnd(&zs);
      throw std::runtime_error(fmt::format(
          "{}: gzip data inflates to more than {} bytes (at compressed byte offset {})", name,
          max_output, offset));
    }
    // Z_BUF_ERROR with input left means "no progress possible": only when input is exhausted.
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) break;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END)
    throw std::runtime_error(fmt::format(
        "{}: gzip data ends early at compressed byte offset {} (file truncated?)", name, size));
  return out;
}

Bytes read_file_maybe_gzip(const std::string& path) {
  Bytes raw = read_file(path);
  if (!is_gzip(raw.data(), raw.size())) return raw;
  return gunzip(raw.data(), raw.size(), path);
}

}  // namespace hg::data
