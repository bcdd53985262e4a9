#include "datasets/idx.h"

#include <fmt/format.h>

#include <stdexcept>

namespace hg::data {

size_t idx_element_size(IdxType t) {
  switch (t) {
    case IdxType::U8: case IdxType::I8: return 1;
    case IdxType::I16: return 2;
    case IdxType::I32: case IdxType::F32: return 4;
    case IdxType::F64: return 8;
  }
  return 0;
}

const char* idx_type_name(IdxType t) {
  switch (t) {
    case IdxType::U8: return "u8";
    case IdxType::I8: return "i8";
    case IdxType::I16: return "i16";
    case IdxType::I32: return "i32";
    case IdxType::F32: return "f32";
    case IdxType::F64: return "f64";
  }
  return "?";
}

int64_t IdxArray::numel() const {
  for (int64_t d : dims)
    if (d == 0) return 0;  // before multiplying: the other dims may be huge
  int64_t n = 1;
  for (int64_t d : dims) n *= d;  // parse_idx checked that this product fits in the file
  return n;
}

size_t IdxArray::element_size() const { return idx_element_size(type); }

static uint32_t read_be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

IdxArray parse_idx(const uint8_t* data, size_t size, const std::string& name) {
  auto fail = [&](size_t offset, const std::string& what) -> std::runtime_error {
    return std::runtime_error(fmt::format("{}: {} at byte offset {}", name, what, offset));
  };
  if (size < 4)
    throw fail(size, fmt::format("not an IDX file: only {} bytes, the header needs 4", size));
  if (data[0] != 0 || data[1] != 0)
    throw fail(0, fmt::format("bad IDX magic {:02x} {:02x} {:02x} {:02x} (expected 00 00 <type> <ndim>)",
                              data[0], data[1], data[2], data[3]));
  IdxArray a;
  switch (data[2]) {
    case 0x08: case 0x09: case 0x0B: case 0x0C: case 0x0D: case 0x0E:
      a.type = IdxType(data[2]);
      break;
    default:
      throw fail(2, fmt::format("unknown IDX element type 0x{:02x}", data[2]));
  }
  const int ndim = data[3];
  if (ndim == 0) throw fail(3, "IDX header has 0 dimensions");

  const size_t header = 4 + 4 * size_t(ndim);
  if (size < header)
    throw fail(size, fmt::format("IDX header cut short: {} dimensions need {} header bytes, file has {}",
                                 ndim, header, size));
  // Multiply the dimensions carefully: a corrupt header must not overflow into a small number
  // (65536^4 = 2^64 would wrap to 0 and "match" an empty file).
  const size_t esize = idx_element_size(a.type);
  const size_t available = size - header;
  uint64_t need = esize;
  bool overflow = false, has_zero = false;
  for (int d = 0; d < ndim; ++d) {
    const uint32_t dim = read_be32(data + 4 + 4 * d);
    a.dims.push_back(dim);
    has_zero |= dim == 0;
    if (__builtin_mul_overflow(need, uint64_t(dim), &need)) overflow = true;
  }
  if (has_zero) need = 0, overflow = false;  // an empty array, whatever the other dims say
  if (overflow || need > available) {
    std::string shape;
    for (size_t d = 0; d < a.dims.size(); ++d) shape += (d ? "x" : "") + std::to_string(a.dims[d]);
    throw fail(size, fmt::format("short data: header says {} elements of type {} ({} bytes "
                                 "from offset {}), but only {} data bytes follow (truncated?)",
                                 shape, idx_type_name(a.type),
                                 overflow ? std::string("more than 2^64") : std::to_string(need),
                                 header, available));
  }
  if (need < available)
    throw fail(header + need, fmt::format("{} unexpected trailing bytes after the last element",
                                          available - need));

  a.data_offset = header;
  a.data.assign(data + header, data + header + need);
  // IDX stores multi-byte elements big-endian; flip them to the host's (little-endian) order.
  if (esize > 1) {
    for (size_t i = 0; i < a.data.size(); i += esize)
      for (size_t j = 0; j < esize / 2; ++j) std::swap(a.data[i + j], a.data[i + esize - 1 - j]);
  }
  return a;
}

IdxArray read_idx(const std::string& path) {
  Bytes raw = read_file(path);
  if (!is_gzip(raw.data(), raw.size())) return parse_idx(raw.data(), raw.size(), path);
  Bytes bytes = gunzip(raw.data(), raw.size(), path);
  // Offsets of IDX errors count bytes of the decompressed stream; say so in the name.
  return parse_idx(bytes.data(), bytes.size(), path + " (after gunzip)");
}

}  // namespace hg::data
