#include "framework/io/checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "datasets/bytes.h"
#include "framework/io/atomic_file.h"

namespace hg::io {

size_t checkpoint_dtype_size(std::string_view dtype) {
  if (dtype == "f64" || dtype == "i64") return 8;
  if (dtype == "f32" || dtype == "i32") return 4;
  if (dtype == "f16" || dtype == "bf16") return 2;
  if (dtype == "u8") return 1;
  return 0;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + ")";
}

int64_t CheckpointEntry::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

NonFinite find_non_finite(const CheckpointEntry& e) {
  // (exponent mask, sign bit) of each floating-point dtype; the mantissa tells NaN from inf.
  uint64_t exp_mask = 0, sign = 0;
  if (e.dtype == "f64") exp_mask = 0x7FF0000000000000ull, sign = 1ull << 63;
  else if (e.dtype == "f32") exp_mask = 0x7F800000u, sign = 1u << 31;
  else if (e.dtype == "f16") exp_mask = 0x7C00u, sign = 1u << 15;
  else if (e.dtype == "bf16") exp_mask = 0x7F80u, sign = 1u << 15;
  else return {};  // integers are always finite
  const size_t esize = checkpoint_dtype_size(e.dtype);
  const uint64_t mantissa_mask = (sign - 1) & ~exp_mask;
  for (size_t i = 0; i < e.bytes.size() / esize; ++i) {
    uint64_t bits = 0;
    std::memcpy(&bits, e.bytes.data() + i * esize, esize);  // little-endian host (checkpoint.h)
    if ((bits & exp_mask) != exp_mask) continue;
    return {int64_t(i), (bits & mantissa_mask) ? "NaN" : (bits & sign) ? "-inf" : "inf"};
  }
  return {};
}

// numel · elem_size, or -1 when a dim is negative or the product overflows.
static int64_t checked_nbytes(const std::vector<int64_t>& shape, size_t elem_size) {
  uint64_t n = elem_size;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > uint64_t(INT64_MAX) / uint64_t(d)) return -1;
    n *= uint64_t(d);
  }
  return int64_t(n);
}

void Checkpoint::add(const std::string& name, const std::string& dtype,
                     const std::vector<int64_t>& shape, const void* data, size_t nbytes) {
  if (name.empty() || name.size() > 0xFFFF)
    throw std::invalid_argument("checkpoint entry names must be 1..65535 bytes long");
  if (index_.count(name))
    throw std::invalid_argument(fmt::format("checkpoint already has an entry '{}'", name));
  const size_t esize = checkpoint_dtype_size(dtype);
  if (esize == 0)
    throw std::invalid_argument(fmt::format(
        "checkpoint entry '{}': unknown dtype '{}' (known: f32 f16 bf16 f64 i64 i32 u8)", name, dtype));
  if (shape.size() > 255)
    throw std::invalid_argument(fmt::format("checkpoint entry '{}': more than 255 dimensions", name));
  const int64_t expect = checked_nbytes(shape, esize);
  if (expect < 0 || size_t(expect) != nbytes)
    throw std::invalid_argument(fmt::format("checkpoint entry '{}': {} bytes given, but shape {} of {} "
                                            "needs {}", name, nbytes, shape_string(shape), dtype, expect));
  CheckpointEntry e{name, dtype, shape, {}};
  e.bytes.assign(static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + nbytes);
  index_[name] = entries_.size();
  entries_.push_back(std::move(e));
}

bool Checkpoint::has(std::string_view name) const { return index_.find(name) != index_.end(); }

const CheckpointEntry& Checkpoint::at(std::string_view name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    std::string names;
    for (size_t i = 0; i < entries_.size() && i < 12; ++i) names += (i ? ", " : "") + entries_[i].name;
    if (entries_.size() > 12) names += ", ...";
    throw std::runtime_error(fmt::format("{}: checkpoint has no entry '{}' (it has {} entries: {})",
                                         source.empty() ? "checkpoint" : source, name,
                                         entries_.size(), names));
  }
  return entries_[it->second];
}

void Checkpoint::copy_to(std::string_view name, std::string_view dtype,
                         const std::vector<int64_t>& shape, void* dst, size_t nbytes) const {
  const CheckpointEntry& e = at(name);
  if (e.dtype != dtype || e.shape != shape || e.bytes.size() != nbytes)
    throw std::runtime_error(fmt::format("{}: entry '{}' is {} {}, but {} {} was expected",
                                         source.empty() ? "checkpoint" : source, name, e.dtype,
                                         shape_string(e.shape), dtype, shape_string(shape)));
  if (nbytes) std::memcpy(dst, e.bytes.data(), nbytes);
}

// ---- writing --------------------------------------------------------------------------

namespace {
struct Writer {
  std::vector<uint8_t> out;
  void u8(uint8_t v) { out.push_back(v); }
  void uint(uint64_t v, int bytes) {  // little-endian, whatever the host is
    for (int i = 0; i < bytes; ++i) out.push_back(uint8_t(v >> (8 * i)));
  }
  void raw(const void* p, size_t n) {
    out.insert(out.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  }
};
}  // namespace

std::vector<uint8_t> encode_checkpoint(const Checkpoint& ckpt) {
  Writer w;
  w.raw(kCheckpointMagic, 6);
  w.uint(kCheckpointVersion, 2);
  w.uint(0, 8);  // total size, patched below
  const std::string meta = ckpt.meta.dump();
  w.uint(meta.size(), 8);
  w.raw(meta.data(), meta.size());
  w.uint(ckpt.entries().size(), 4);
  for (const CheckpointEntry& e : ckpt.entries()) {
    w.uint(e.name.size(), 2);
    w.raw(e.name.data(), e.name.size());
    w.u8(uint8_t(e.dtype.size()));
    w.raw(e.dtype.data(), e.dtype.size());
    w.u8(uint8_t(e.shape.size()));
    for (int64_t d : e.shape) w.uint(uint64_t(d), 8);
    w.uint(e.bytes.size(), 8);
    w.raw(e.bytes.data(), e.bytes.size());
  }
  const uint64_t total = w.out.size() + 4;
  for (int i = 0; i < 8; ++i) w.out[8 + i] = uint8_t(total >> (8 * i));
  // CRC-32 of everything before it; zlib's crc32 takes uInt lengths, so feed it in pieces.
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t pos = 0; pos < w.out.size(); pos += (1u << 30))
    crc = crc32(crc, w.out.data() + pos, uInt(std::min<size_t>(w.out.size() - pos, 1u << 30)));
  w.uint(crc, 4);
  return std::move(w.out);
}

std::string checkpoint_target_problem(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";  // nothing there (or a folder that will refuse the write)
  if (!S_ISREG(st.st_mode)) return path + " exists and is not a regular file";
  if (st.st_size == 0) return "";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return fmt::format("{} exists and cannot be read to see whether it is a checkpoint: {}; not replacing it", path,
                       std::strerror(errno));
  char head[sizeof kCheckpointMagic] = {};
  const ssize_t n = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  if (n == ssize_t(sizeof head) && std::memcmp(head, kCheckpointMagic, sizeof head) == 0) return "";
  return path + " exists and is not a halfgrad checkpoint (it does not start with HGCKPT); not replacing it";
}

void save_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  const std::string why = checkpoint_target_problem(path);
  if (!why.empty()) throw std::runtime_error("cannot save a checkpoint: " + why);
  const std::vector<uint8_t> bytes = encode_checkpoint(ckpt);
  write_file_atomic(path, bytes.data(), bytes.size());
}

// ---- reading --------------------------------------------------------------------------

namespace {
struct Reader {
  const uint8_t* data;
  size_t size, pos = 0;
  const std::string& name;

  [[noreturn]] void fail(size_t offset, const std::string& why) const {
    throw std::runtime_error(fmt::format("{}: not a valid checkpoint: {} at byte offset {}", name, why, offset));
  }
  void need(size_t n, const char* what) const {
    if (n > size - pos)
      fail(pos, fmt::format("{} needs {} bytes but only {} remain", what, n, size - pos));
  }
  uint64_t uint(int bytes, const char* what) {
    need(size_t(bytes), what);
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(data[pos + i]) << (8 * i);
    pos += size_t(bytes);
    return v;
  }
  std::string str(size_t n, const char* what) {
    need(n, what);
    std::string s(reinterpret_cast<const char*>(data + pos), n);
    pos += n;
    return s;
  }
};
}  // namespace

// Steps 1 and 2 of reading: the first 16 bytes (or all there are, when fewer), judged
// against the size of the whole file. load_checkpoint() calls it before it reads the rest.
static void check_header(const uint8_t* head, size_t head_size, uint64_t file_size, const std::string& name) {
  Reader r{head, head_size, 0, name};
  // 1. Magic and version: is this our file at all, and can this build read it?
  if (file_size < 6 || std::memcmp(head, kCheckpointMagic, 6) != 0)
    r.fail(0, file_size < 6 ? fmt::format("file is only {} bytes", file_size) : "bad magic (expected \"HGCKPT\")");
  r.pos = 6;
  const uint64_t version = r.uint(2, "the version");
  if (version != kCheckpointVersion)
    r.fail(6, fmt::format("format version {} (this build reads version {})", version, kCheckpointVersion));
  // 2. Total size: catches a truncated file (or one with junk appended) with a plain reason.
  const uint64_t total = r.uint(8, "the total size");
  if (total != file_size)
    r.fail(file_size < total ? file_size : total,
           fmt::format("the header says the file is {} bytes but it is {} ({})", total, file_size,
                       file_size < total ? "truncated" : "trailing bytes"));
}

Checkpoint decode_checkpoint(const uint8_t* data, size_t size, const std::string& name) {
  check_header(data, std::min<size_t>(size, 16), size, name);
  Reader r{data, size, 16, name};
  if (size < 16 + 8 + 4 + 4) r.fail(size, "file too short for the metadata length, entry count and CRC");
  // 3. CRC over everything but the last 4 bytes: catches flipped bits anywhere.
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t pos = 0; pos < size - 4; pos += (1u << 30))
    crc = crc32(crc, data + pos, uInt(std::min<size_t>(size - 4 - pos, 1u << 30)));
  Reader tail{data, size, size - 4, name};
  const uint64_t stored = tail.uint(4, "the CRC");
  if (stored != crc)
    r.fail(size - 4, fmt::format("CRC-32 mismatch (stored {:08x}, computed {:08x}): the file is corrupt",
                                 stored, uint32_t(crc)));
  r.size = size - 4;  // the CRC is not part of the body

  // 4. The body, every length checked against what remains.
  Checkpoint ckpt;
  ckpt.source = name;
  const uint64_t meta_len = r.uint(8, "the metadata length");
  const size_t meta_at = r.pos;
  r.need(meta_len, "the metadata");
  const std::string meta = r.str(size_t(meta_len), "the metadata");
  ckpt.meta = nlohmann::json::parse(meta, nullptr, /*allow_exceptions=*/false);
  if (ckpt.meta.is_discarded() || !ckpt.meta.is_object())
    r.fail(meta_at, "the metadata is not a JSON object");
  const uint64_t count = r.uint(4, "the entry count");
  for (uint64_t i = 0; i < count; ++i) {
    const size_t entry_at = r.pos;
    const size_t name_len = size_t(r.uint(2, "an entry name length"));
    std::string ename = r.str(name_len, "an entry name");
    const size_t dtype_len = size_t(r.uint(1, "a dtype length"));
    std::string dtype = r.str(dtype_len, "a dtype");
    const size_t esize = checkpoint_dtype_size(dtype);
    if (esize == 0) r.fail(r.pos - dtype_len, fmt::format("entry '{}' has unknown dtype '{}'", ename, dtype));
    const size_t ndim = size_t(r.uint(1, "a dimension count"));
    std::vector<int64_t> shape;
    for (size_t d = 0; d < ndim; ++d) shape.push_back(int64_t(r.uint(8, "a dimension")));
    const size_t nbytes_at = r.pos;
    const uint64_t nbytes = r.uint(8, "an entry size");
    const int64_t expect = checked_nbytes(shape, esize);
    if (expect < 0 || uint64_t(expect) != nbytes)
      r.fail(nbytes_at, fmt::format("entry '{}' is {} {} but holds {} bytes", ename, dtype,
                                    shape_string(shape), nbytes));
    r.need(nbytes, "the entry's data");
    if (ename.empty() || ckpt.has(ename))
      r.fail(entry_at, fmt::format("entry name '{}' is empty or repeated", ename));
    ckpt.add(ename, dtype, shape, data + r.pos, size_t(nbytes));
    r.pos += size_t(nbytes);
  }
  if (r.pos != r.size) r.fail(r.pos, fmt::format("{} unexpected bytes after the last entry", r.size - r.pos));
  return ckpt;
}

Checkpoint load_checkpoint(const std::string& path) {
  // datasets/bytes.h opens only a regular file: a folder or a FIFO given as --resume is
  // refused with what it is (a FIFO would otherwise block the program forever).
  data::FileReader file(path, "checkpoint");
  // The header alone first, so that a file of gigabytes that is not a checkpoint is refused
  // from 16 bytes instead of being read into memory whole.
  data::Bytes bytes(size_t(std::min<uint64_t>(file.size(), 16)));
  const size_t head = data::read_up_to(file, bytes.data(), bytes.size());
  check_header(bytes.data(), head, file.size(), path);
  bytes.resize(size_t(file.size()));
  bytes.resize(head + data::read_up_to(file, bytes.data() + head, bytes.size() - head));
  return decode_checkpoint(bytes.data(), bytes.size(), path);
}

}  // namespace hg::io
