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

// Inflates the one gzip member starting at data[start], appending to `out`; returns the
// offset just past its end.
static size_t inflate_member(const uint8_t* data, size_t size, size_t start, const std::string& name,
                             size_t max_output, Bytes& out) {
  z_stream zs{};
  // 16 + MAX_WBITS: expect a gzip header and trailer (zlib checks the trailer's CRC32 and size).
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    throw std::runtime_error(fmt::format("{}: zlib could not start inflating", name));
  zs.next_in = const_cast<Bytef*>(data + start);
  // zlib's counters are 32-bit (uInt); feed the input in pieces so a huge file still works.
  size_t in_left = size - start;
  std::vector<uint8_t> chunk(1 << 16);
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (zs.avail_in == 0) {
      if (in_left == 0) break;  // no more input and no end of stream: truncated
      zs.avail_in = uInt(std::min<size_t>(in_left, 1u << 30));
      in_left -= zs.avail_in;
    }
    zs.next_out = chunk.data();
    zs.avail_out = uInt(chunk.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    const size_t offset = size - in_left - zs.avail_in;  // compressed bytes consumed so far
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_MEM_ERROR || rc == Z_STREAM_ERROR) {
      std::string why = zs.msg ? zs.msg : "corrupt stream";
      inflateEnd(&zs);
      throw std::runtime_error(
          fmt::format("{}: bad gzip data at compressed byte offset {}: {}", name, offset, why));
    }
    out.insert(out.end(), chunk.data(), chunk.data() + (chunk.size() - zs.avail_out));
    if (out.size() > max_output) {
      inflateEnd(&zs);
      throw std::runtime_error(fmt::format(
          "{}: gzip data inflates to more than {} bytes (at compressed byte offset {})", name,
          max_output, offset));
    }
    // Z_BUF_ERROR means "no progress possible": with fresh output space, only when the
    // input is exhausted.
    if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) break;
  }
  const size_t end = size - in_left - zs.avail_in;
  inflateEnd(&zs);
  if (rc != Z_STREAM_END)
    throw std::runtime_error(fmt::format(
        "{}: gzip data ends early at compressed byte offset {} (file truncated?)", name, size));
  return end;
}

Bytes gunzip(const uint8_t* data, size_t size, const std::string& name, size_t max_output) {
  Bytes out;
  size_t pos = inflate_member(data, size, 0, name, max_output, out);
  // `cat a.gz b.gz` is a valid gzip file (RFC 1952: members follow each other) and means the
  // two contents one after the other; anything else after the end is damage.
  while (pos < size) {
    if (!is_gzip(data + pos, size - pos))
      throw std::runtime_error(fmt::format("{}: {} unexpected bytes after the end of the gzip data "
                                           "at compressed byte offset {}", name, size - pos, pos));
    pos = inflate_member(data, size, pos, name, max_output, out);
  }
  return out;
}

Bytes read_file_maybe_gzip(const std::string& path) {
  Bytes raw = read_file(path);
  if (!is_gzip(raw.data(), raw.size())) return raw;
  return gunzip(raw.data(), raw.size(), path);
}

}  // namespace hg::data
