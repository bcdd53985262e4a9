#include "datasets/idx.h"

#include <fmt/format.h>

#include <algorithm>
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

static int64_t product(const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (d == 0) return 0;  // before multiplying: the others may multiply past 2^63
  int64_t n = 1;
  for (int64_t d : dims) n *= d;  // the header check bounded every factor and the product
  return n;
}

int64_t IdxHeader::numel() const { return product(dims); }
int64_t IdxArray::numel() const { return product(dims); }
size_t IdxArray::element_size() const { return idx_element_size(type); }

std::string IdxHeader::shape() const {
  std::string s;
  for (size_t d = 0; d < dims.size(); ++d) s += (d ? "x" : "") + std::to_string(dims[d]);
  return s;
}

static uint32_t read_be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

// ---- the header -------------------------------------------------------------------------

IdxReader::IdxReader(const std::string& path) : name_(path), contents_name_(path) {
  file_ = std::make_unique<FileReader>(path);
  start(*file_, file_->size());
}

IdxReader::IdxReader(const uint8_t* data, size_t size, const std::string& name)
    : name_(name), contents_name_(name) {
  memory_ = std::make_unique<MemoryReader>(data, size);
  start(*memory_, size);
}

void IdxReader::fail(uint64_t offset, const std::string& what) const {
  throw std::runtime_error(fmt::format("{}: {} at byte offset {}", contents_name_, what, offset));
}

// The limits of idx.h, checked on the dimensions alone, so a corrupt header can neither
// overflow a product nor make anything allocate. Returns "" or what is wrong.
static std::string over_limits(const std::vector<int64_t>& dims, size_t esize) {
  if (dims[0] > kIdxMaxItems)
    return fmt::format("{} items, more than the limit of {} (2^24)", dims[0], kIdxMaxItems);
  int64_t item = 1;  // elements per item; saturates just above the limit (no overflow)
  for (size_t d = 1; d < dims.size(); ++d) {
    if (dims[d] > kIdxMaxItemElements)
      return fmt::format("a dimension of {}, more than the limit of {} (4096x4096)", dims[d],
                         kIdxMaxItemElements);
    item = std::min(item * dims[d], kIdxMaxItemElements + 1);  // a zero dimension: an empty array
  }
  if (item > kIdxMaxItemElements)
    return fmt::format("items of more than {} elements (4096x4096), the limit", kIdxMaxItemElements);
  const uint64_t bytes = uint64_t(dims[0]) * uint64_t(item) * esize;  // < 2^24 · 2^24 · 8
  if (bytes > kIdxMaxDataBytes)
    return fmt::format("{} bytes of elements, more than the limit of {} (1 GiB)", bytes, kIdxMaxDataBytes);
  return "";
}

void IdxReader::start(ByteReader& raw, uint64_t size) {
  uint8_t head[4 + 4 * 255];
  size_t got = read_up_to(raw, head, 4);
  in_ = &raw;
  if (is_gzip(head, got)) {
    gunzip_ = std::make_unique<GunzipReader>(raw, size, name_, head, got);
    in_ = gunzip_.get();
    contents_name_ = name_ + " (after gunzip)";
    got = read_up_to(*in_, head, 4);
  }

  // 1. The fixed four bytes: magic, element type, number of dimensions.
  if (got < 4) fail(got, fmt::format("not an IDX file: only {} bytes, the header needs 4", got));
  if (head[0] != 0 || head[1] != 0)
    fail(0, fmt::format("bad IDX magic {:02x} {:02x} {:02x} {:02x} (expected 00 00 <type> <ndim>)",
                        head[0], head[1], head[2], head[3]));
  switch (head[2]) {
    case 0x08: case 0x09: case 0x0B: case 0x0C: case 0x0D: case 0x0E:
      header_.type = IdxType(head[2]);
      break;
    default:
      fail(2, fmt::format("unknown IDX element type 0x{:02x}", head[2]));
  }
  const int ndim = head[3];
  if (ndim == 0) fail(3, "IDX header has 0 dimensions");

  // 2. The dimensions, against the limits.
  header_.size = 4 + 4 * size_t(ndim);
  got += read_up_to(*in_, head + 4, header_.size - 4);
  if (got < header_.size)
    fail(got, fmt::format("IDX header cut short: {} dimensions need {} header bytes, the file has {}",
                          ndim, header_.size, got));
  for (int d = 0; d < ndim; ++d) header_.dims.push_back(read_be32(head + 4 + 4 * d));
  const size_t esize = idx_element_size(header_.type);
  if (const std::string why = over_limits(header_.dims, esize); !why.empty())
    fail(4, fmt::format("IDX header claims {} elements of type {}: {}", header_.shape(),
                        idx_type_name(header_.type), why));
  header_.data_bytes = uint64_t(header_.numel()) * esize;

  // 3. The claim against the file's size, before a byte of data is read.
  const std::string claim = fmt::format("header says {} elements of type {} ({} bytes from offset {})",
                                        header_.shape(), idx_type_name(header_.type),
                                        header_.data_bytes, header_.size);
  if (!gunzip_) {
    const uint64_t available = size - header_.size;
    if (header_.data_bytes > available)
      fail(size, fmt::format("short data: {}, but only {} data bytes follow (truncated?)", claim, available));
    if (header_.data_bytes < available)
      fail(header_.size + header_.data_bytes,
           fmt::format("{} unexpected trailing bytes after the last element", available - header_.data_bytes));
  } else if (header_.size + header_.data_bytes > kDeflateMaxRatio * size) {
    fail(4, fmt::format("impossible size: {}, but {} bytes of gzip inflate to at most {} (deflate "
                        "expands at most {}:1)", claim, size, kDeflateMaxRatio * size, kDeflateMaxRatio));
  }
}

// ---- the elements -----------------------------------------------------------------------

IdxArray IdxReader::read() {
  if (read_done_) throw std::logic_error("IdxReader::read: the elements were already read");
  read_done_ = true;
  IdxArray a;
  a.type = header_.type;
  a.dims = header_.dims;
  a.data_offset = header_.size;
  a.data.resize(size_t(header_.data_bytes));  // bounded by kIdxMaxDataBytes and the file's size
  const size_t got = read_up_to(*in_, a.data.data(), a.data.size());
  if (got < a.data.size())
    fail(header_.size + got, fmt::format("short data: header says {} elements of type {} ({} bytes "
                                         "from offset {}), but only {} data bytes follow (truncated?)",
                                         header_.shape(), idx_type_name(a.type), a.data.size(),
                                         header_.size, got));
  // A raw file's size was checked exactly; a gzip stream must end here (reading on also
  // checks the gzip trailer's CRC). One byte more is enough to know it does not.
  uint8_t extra;
  if (gunzip_ && gunzip_->read(&extra, 1) == 1)
    fail(header_.size + got, "unexpected trailing bytes after the last element (the gzip data "
                             "holds more than the header declares)");

  // IDX stores multi-byte elements big-endian; flip them to the host's (little-endian) order.
  const size_t esize = a.element_size();
  if (esize > 1) {
    for (size_t i = 0; i < a.data.size(); i += esize)
      for (size_t j = 0; j < esize / 2; ++j) std::swap(a.data[i + j], a.data[i + esize - 1 - j]);
  }
  return a;
}

IdxArray read_idx(const std::string& path) { return IdxReader(path).read(); }

IdxArray parse_idx(const uint8_t* data, size_t size, const std::string& name) {
  return IdxReader(data, size, name).read();
}

}  // namespace hg::data
