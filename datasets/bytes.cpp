#include "datasets/bytes.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hg::data {

// ---- files ----------------------------------------------------------------------------

static const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

FileReader::FileReader(const std::string& path, const std::string& what) : path_(path) {
  const std::string named = what.empty() ? path : what + " " + path;
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  // It changes nothing for a regular file, the only kind that is kept.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw std::runtime_error(fmt::format("cannot open {}: {}", named, std::strerror(errno)));
  struct stat st;
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw std::runtime_error(fmt::format("cannot open {}: {}", named, std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw std::runtime_error(fmt::format("{} is {}, not a file", named, kind_of(st.st_mode)));
  }
  size_ = uint64_t(st.st_size);
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);  // read-only: nothing can be lost at close
}

size_t FileReader::read(uint8_t* dst, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd_, dst + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      throw std::runtime_error(fmt::format("cannot read {}: {} (at byte offset {})", path_,
                                           std::strerror(errno), ::lseek(fd_, 0, SEEK_CUR)));
    if (r == 0) break;  // end of file
    got += size_t(r);
  }
  return got;
}

size_t MemoryReader::read(uint8_t* dst, size_t n) {
  const size_t k = std::min(n, size_ - pos_);
  if (k) std::memcpy(dst, data_ + pos_, k);
  pos_ += k;
  return k;
}

size_t read_up_to(ByteReader& r, uint8_t* dst, size_t n) {
  size_t got = 0;
  while (got < n) {
    const size_t k = r.read(dst + got, n - got);
    if (k == 0) break;
    got += k;
  }
  return got;
}

Bytes read_file(const std::string& path, const std::string& what) {
  FileReader f(path, what);
  Bytes out(size_t(f.size()));
  out.resize(read_up_to(f, out.data(), out.size()));
  return out;
}

// ---- gzip -----------------------------------------------------------------------------

bool is_gzip(const uint8_t* data, size_t size) {
  return size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
}

GunzipReader::GunzipReader(ByteReader& in, uint64_t in_size, std::string name, const uint8_t* prefix,
                           size_t prefix_size)
    : in_(in), in_size_(in_size), name_(std::move(name)), buf_(size_t(1) << 16) {
  // 16 + MAX_WBITS: expect a gzip header and trailer (zlib checks the trailer's CRC-32 and size).
  if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK)
    throw std::runtime_error(fmt::format("{}: zlib could not start inflating", name_));
  std::copy(prefix, prefix + prefix_size, buf_.begin());
  zs_.next_in = buf_.data();
  zs_.avail_in = uInt(prefix_size);
  taken_ = prefix_size;
}

GunzipReader::~GunzipReader() { inflateEnd(&zs_); }

bool GunzipReader::refill() {
  // Keep the bytes zlib has not used yet at the front, fill the rest from the input.
  std::memmove(buf_.data(), zs_.next_in, zs_.avail_in);
  const size_t k = in_.read(buf_.data() + zs_.avail_in, buf_.size() - zs_.avail_in);
  zs_.next_in = buf_.data();
  zs_.avail_in += uInt(k);
  taken_ += k;
  return k > 0;
}

void GunzipReader::after_member_end() {
  // `cat a.gz b.gz` is a valid gzip file (RFC 1952: members follow each other) and means the
  // two contents one after the other; anything else after the end is damage.
  if (zs_.avail_in < 2) refill();
  if (zs_.avail_in == 0) {
    done_ = true;
    return;
  }
  if (!is_gzip(zs_.next_in, zs_.avail_in))
    throw std::runtime_error(fmt::format("{}: {} unexpected bytes after the end of the gzip data "
                                         "at compressed byte offset {}",
                                         name_, in_size_ - consumed(), consumed()));
  inflateReset(&zs_);
}

size_t GunzipReader::read(uint8_t* dst, size_t n) {
  size_t produced = 0;
  while (produced < n && !done_) {
    if (zs_.avail_in == 0 && !refill())  // no more input and no end of stream: truncated
      throw std::runtime_error(fmt::format(
          "{}: gzip data ends early at compressed byte offset {} (file truncated?)", name_, consumed()));
    // zlib's counters are 32-bit (uInt): hand it at most 1 GiB of output space at a time.
    zs_.next_out = dst + produced;
    zs_.avail_out = uInt(std::min<size_t>(n - produced, size_t(1) << 30));
    const uInt space = zs_.avail_out;
    const int rc = inflate(&zs_, Z_NO_FLUSH);
    produced += space - zs_.avail_out;
    if (rc == Z_STREAM_END) {
      after_member_end();
    } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && zs_.avail_in == 0)) {
      // Z_DATA_ERROR (corrupt stream, bad CRC), Z_NEED_DICT, Z_MEM_ERROR, Z_STREAM_ERROR.
      // (Z_BUF_ERROR with no input left only says "no progress": the loop refills it. With
      // input and output space both left it cannot happen; treated as damage, never a spin.)
      throw std::runtime_error(fmt::format("{}: bad gzip data at compressed byte offset {}: {}",
                                           name_, consumed(), zs_.msg ? zs_.msg : "corrupt stream"));
    }
  }
  return produced;
}

}  // namespace hg::data
