// IDX reader: good files (raw and gzip, every element type) and every kind of bad file —
// bad magic, unknown type, cut header, short data, trailing bytes, absurd dimensions,
// truncated or corrupted gzip. Bad files must throw with the file name and a byte offset,
// never crash and never return fewer elements than the header promises.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "datasets/idx.h"
#include "tests/unit/child_limits.h"

using hg::data::Bytes;

namespace {
struct TempDir {
  std::string path;
  // Under /tmp, or under the working folder (the build tree, when ctest runs it).
  explicit TempDir(const char* where = "/tmp") {
    std::string tmpl = std::string(where) + "/hg_test_idx_XXXXXX";
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

void write_bytes(const std::string& path, const Bytes& b) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  REQUIRE(f);
  if (!b.empty()) std::fwrite(b.data(), 1, b.size(), f);
  std::fclose(f);
}

Bytes gzip_bytes(const Bytes& raw, int level = 6) {
  // deflateInit2 with windowBits 16+15 writes a gzip header and trailer.
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, level, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  Bytes out(deflateBound(&zs, raw.size()) + 32);
  zs.next_in = const_cast<Bytef*>(raw.data());
  zs.avail_in = uInt(raw.size());
  zs.next_out = out.data();
  zs.avail_out = uInt(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

// An IDX header for type `type` and `dims`, followed by `data`.
Bytes idx_file(uint8_t type, const std::vector<uint32_t>& dims, const Bytes& data) {
  Bytes b = {0, 0, type, uint8_t(dims.size())};
  for (uint32_t d : dims) {
    b.push_back(uint8_t(d >> 24));
    b.push_back(uint8_t(d >> 16));
    b.push_back(uint8_t(d >> 8));
    b.push_back(uint8_t(d));
  }
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

Bytes counting(size_t n) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = uint8_t(i * 7 + 3);
  return b;
}

// Runs read_idx on `bytes` written to `name` and returns the error message ("" if none).
std::string error_of(const TempDir& dir, const std::string& name, const Bytes& bytes) {
  const std::string path = dir.path + "/" + name;
  write_bytes(path, bytes);
  try {
    hg::data::read_idx(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("idx: a raw u8 file reads back exactly") {
  TempDir dir;
  const Bytes pixels = counting(5 * 4 * 3);
  write_bytes(dir.path + "/a-idx3-ubyte", idx_file(0x08, {5, 4, 3}, pixels));
  const hg::data::IdxArray a = hg::data::read_idx(dir.path + "/a-idx3-ubyte");
  CHECK(a.type == hg::data::IdxType::U8);
  CHECK(a.dims == std::vector<int64_t>{5, 4, 3});
  CHECK(a.numel() == 60);
  CHECK(a.data_offset == 16);
  CHECK(a.data == pixels);
}

TEST_CASE("idx: gzip is detected by magic bytes, whatever the file name") {
  TempDir dir;
  const Bytes pixels = counting(2 * 28 * 28);
  const Bytes raw = idx_file(0x08, {2, 28, 28}, pixels);
  write_bytes(dir.path + "/plain.gz", raw);                // raw bytes, misleading name
  write_bytes(dir.path + "/packed", gzip_bytes(raw));       // gzip bytes, no .gz
  CHECK(hg::data::read_idx(dir.path + "/plain.gz").data == pixels);
  const hg::data::IdxArray b = hg::data::read_idx(dir.path + "/packed");
  CHECK(b.dims == std::vector<int64_t>{2, 28, 28});
  CHECK(b.data == pixels);
}

TEST_CASE("idx: multi-byte elements are big-endian in the file, host order in memory") {
  // i16 0x0102 = 258, i32 0x01020304 = 16909060, f32 0x3FC00000 = 1.5, f64 0x4004000000000000 = 2.5
  const Bytes i16 = idx_file(0x0B, {1}, {0x01, 0x02});
  const Bytes i32 = idx_file(0x0C, {1}, {0x01, 0x02, 0x03, 0x04});
  const Bytes f32 = idx_file(0x0D, {1}, {0x3F, 0xC0, 0x00, 0x00});
  const Bytes f64 = idx_file(0x0E, {1}, {0x40, 0x04, 0, 0, 0, 0, 0, 0});
  int16_t a;
  int32_t b;
  float c;
  double d;
  std::memcpy(&a, hg::data::parse_idx(i16.data(), i16.size(), "i16").data.data(), 2);
  std::memcpy(&b, hg::data::parse_idx(i32.data(), i32.size(), "i32").data.data(), 4);
  std::memcpy(&c, hg::data::parse_idx(f32.data(), f32.size(), "f32").data.data(), 4);
  std::memcpy(&d, hg::data::parse_idx(f64.data(), f64.size(), "f64").data.data(), 8);
  CHECK(a == 258);
  CHECK(b == 16909060);
  CHECK(c == 1.5f);
  CHECK(d == 2.5);
}

TEST_CASE("idx: bad magic, unknown type and zero dimensions name the file and the offset") {
  TempDir dir;
  const Bytes good = idx_file(0x08, {2, 2}, counting(4));
  Bytes bad_magic = good;
  bad_magic[0] = 0x1;
  std::string msg = error_of(dir, "magic.idx", bad_magic);
  INFO(msg);
  CHECK(msg.find("magic.idx") != std::string::npos);
  CHECK(msg.find("bad IDX magic") != std::string::npos);
  CHECK(msg.find("byte offset 0") != std::string::npos);

  Bytes bad_type = good;
  bad_type[2] = 0x07;
  msg = error_of(dir, "type.idx", bad_type);
  INFO(msg);
  CHECK(msg.find("unknown IDX element type 0x07") != std::string::npos);
  CHECK(msg.find("byte offset 2") != std::string::npos);

  msg = error_of(dir, "zero.idx", {0, 0, 8, 0});
  CHECK(msg.find("0 dimensions at byte offset 3") != std::string::npos);

  msg = error_of(dir, "tiny.idx", {0, 0});
  CHECK(msg.find("only 2 bytes") != std::string::npos);
  msg = error_of(dir, "empty.idx", {});
  CHECK(msg.find("empty.idx") != std::string::npos);
}

TEST_CASE("idx: a cut header, short data and trailing bytes are errors, never a shorter array") {
  TempDir dir;
  const Bytes full = idx_file(0x08, {5, 4, 3}, counting(60));  // 16 header + 60 data bytes

  // Every truncation point, header or data: always an error naming the file, with an offset.
  for (size_t cut = 0; cut < full.size(); ++cut) {
    const std::string msg = error_of(dir, "cut.idx", Bytes(full.begin(), full.begin() + long(cut)));
    INFO("cut at ", cut, ": ", msg);
    REQUIRE(!msg.empty());
    CHECK(msg.find("cut.idx") != std::string::npos);
    CHECK(msg.find("byte offset") != std::string::npos);
  }
  std::string msg = error_of(dir, "short.idx", Bytes(full.begin(), full.end() - 1));
  INFO(msg);
  CHECK(msg.find("short data") != std::string::npos);
  CHECK(msg.find("5x4x3") != std::string::npos);
  CHECK(msg.find("59 data bytes") != std::string::npos);
  CHECK(msg.find("byte offset 75") != std::string::npos);  // where the file ends

  msg = error_of(dir, "cuthead.idx", Bytes(full.begin(), full.begin() + 9));
  CHECK(msg.find("header cut short") != std::string::npos);
  CHECK(msg.find("byte offset 9") != std::string::npos);

  Bytes longer = full;
  longer.push_back(0);
  longer.push_back(0);
  msg = error_of(dir, "long.idx", longer);
  INFO(msg);
  CHECK(msg.find("2 unexpected trailing bytes") != std::string::npos);
  CHECK(msg.find("byte offset 76") != std::string::npos);
}

TEST_CASE("idx: absurd dimensions are refused by the header limits, without allocating or overflowing") {
  // 0xFFFFFFFF^4 overflows 64 bits; a naive product could wrap to a small number.
  TempDir dir;
  const Bytes huge = idx_file(0x0E, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu}, counting(16));
  std::string msg = error_of(dir, "huge.idx", huge);
  INFO(msg);
  CHECK(msg.find("huge.idx") != std::string::npos);
  CHECK(msg.find("more than the limit of 16777216 (2^24)") != std::string::npos);
  // 2^32 × 2^32 = 2^64 ≡ 0 (mod 2^64) would pass a wrapping check with empty data:
  const Bytes wraps = idx_file(0x08, {0x10000u, 0x10000u, 0x10000u, 0x10000u}, {});
  CHECK(error_of(dir, "wrap.idx", wraps).find("limit") != std::string::npos);
  // Each limit alone: 2^24 + 1 items; an item of 4097 × 4096 elements; more than 1 GiB in all.
  msg = error_of(dir, "items.idx", idx_file(0x08, {(1u << 24) + 1}, {}));
  CHECK(msg.find("16777217 items, more than the limit") != std::string::npos);
  msg = error_of(dir, "item.idx", idx_file(0x08, {1, 4097, 4096}, {}));
  CHECK(msg.find("items of more than 16777216 elements") != std::string::npos);
  msg = error_of(dir, "total.idx", idx_file(0x0E, {1u << 24, 9}, {}));  // 2^24 · 9 f64
  INFO(msg);
  CHECK(msg.find("1207959552 bytes of elements, more than the limit") != std::string::npos);
  CHECK(msg.find("byte offset 4") != std::string::npos);  // where the dimensions start
  // The largest header within every limit still has to match the file's size.
  CHECK(error_of(dir, "max.idx", idx_file(0x08, {1u << 14, 256, 256}, {})).find("short data") != std::string::npos);
  // A zero dimension is a legal empty array; a huge dimension beside it is not.
  const Bytes empty = idx_file(0x08, {0, 28, 28}, {});
  CHECK(hg::data::parse_idx(empty.data(), empty.size(), "empty").numel() == 0);
  const Bytes empty_huge = idx_file(0x08, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0}, {});
  CHECK(error_of(dir, "empty_huge.idx", empty_huge).find("limit") != std::string::npos);
}

TEST_CASE("idx: truncated and corrupted gzip are errors naming the file") {
  TempDir dir;
  const Bytes raw = idx_file(0x08, {50, 28, 28}, counting(50 * 28 * 28));
  const Bytes gz = gzip_bytes(raw);
  REQUIRE(gz.size() > 100);

  // Cut anywhere after the gzip magic: "ends early" or a bad-data error, never success.
  for (size_t cut : {size_t(2), size_t(10), gz.size() / 2, gz.size() - 8, gz.size() - 1}) {
    const std::string msg = error_of(dir, "cut.gz", Bytes(gz.begin(), gz.begin() + long(cut)));
    INFO("cut at ", cut, ": ", msg);
    CHECK(msg.find("cut.gz") != std::string::npos);
    CHECK(msg.find("compressed byte offset") != std::string::npos);
  }
  const std::string half = error_of(dir, "half.gz", Bytes(gz.begin(), gz.begin() + long(gz.size() / 2)));
  CHECK(half.find("ends early") != std::string::npos);

  // A wrong CRC in the trailer: zlib's "incorrect data check".
  Bytes bad_crc = gz;
  bad_crc[gz.size() - 8] ^= 0x55;
  const std::string crc_msg = error_of(dir, "crc.gz", bad_crc);
  INFO(crc_msg);
  CHECK(crc_msg.find("bad gzip data") != std::string::npos);

  // A flipped byte inside the deflate stream: an error of some kind, never data.
  for (size_t at = 10; at < gz.size() - 8; at += 37) {
    Bytes flipped = gz;
    flipped[at] ^= 0xFF;
    const std::string msg = error_of(dir, "flip.gz", flipped);
    INFO("flipped byte ", at);
    CHECK(msg.find("flip.gz") != std::string::npos);
  }
}

TEST_CASE("idx: concatenated gzip members are one stream, junk after the end is an error") {
  TempDir dir;
  const Bytes raw = idx_file(0x08, {3, 28, 28}, counting(3 * 28 * 28));
  const Bytes first(raw.begin(), raw.begin() + 1000), second(raw.begin() + 1000, raw.end());
  Bytes two = gzip_bytes(first);
  const Bytes g2 = gzip_bytes(second);
  two.insert(two.end(), g2.begin(), g2.end());  // what `cat a.gz b.gz` makes
  write_bytes(dir.path + "/two.gz", two);
  CHECK(hg::data::read_idx(dir.path + "/two.gz").data == counting(3 * 28 * 28));

  Bytes junk = gzip_bytes(raw);
  const size_t end = junk.size();
  junk.push_back('x');
  junk.push_back('y');
  const std::string msg = error_of(dir, "junk.gz", junk);
  INFO(msg);
  CHECK(msg.find("2 unexpected bytes after the end of the gzip data") != std::string::npos);
  CHECK(msg.find("offset " + std::to_string(end)) != std::string::npos);
}

TEST_CASE("idx: a missing file names the path") {
  try {
    hg::data::read_idx("/nonexistent/dir/train-images-idx3-ubyte.gz");
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("/nonexistent/dir/train-images-idx3-ubyte.gz") != std::string::npos);
  }
}

TEST_CASE("idx: a folder, a FIFO or a device in place of the file is named for what it is, at once") {
  // A FIFO without a writer would block a plain open() forever: the child's alarm (10 s)
  // turns such a hang into a failed test instead of a stuck test run.
  TempDir dir;
  const std::string folder = dir.path + "/train-images-idx3-ubyte", fifo = dir.path + "/fifo-idx1-ubyte";
  REQUIRE(::mkdir(folder.c_str(), 0755) == 0);
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const struct { std::string path, kind; } cases[] = {
      {folder, "is a folder, not a file"},
      {fifo, "is a named pipe (FIFO), not a file"},
      {"/dev/zero", "is a device, not a file"}};  // would never end
  for (const auto& c : cases) {
    const ChildResult r = run_limited([&] { hg::data::read_idx(c.path); }, size_t(100) << 20, 10);
    INFO(c.path << ": " << outcome_name(r.outcome) << ": " << r.message << " (" << r.cpu_seconds << " s CPU)");
    CHECK(r.outcome == ChildResult::Refused);
    CHECK(r.message == c.path + " " + c.kind);
  }
}

TEST_CASE("idx: a gzip whose header claims more than the file can inflate to is refused before inflating") {
  // 1 GiB claimed (the limit, exactly) by a gzip of a few dozen bytes: deflate expands at
  // most 1032:1, so this cannot be true; it is refused without inflating or allocating.
  TempDir dir;
  const Bytes claim = idx_file(0x08, {1u << 14, 256, 256}, counting(1000));
  const Bytes gz = gzip_bytes(claim);
  const std::string msg = error_of(dir, "claims.gz", gz);
  INFO(msg);
  CHECK(msg.find("claims.gz (after gunzip): impossible size") != std::string::npos);
  CHECK(msg.find(std::to_string(gz.size()) + " bytes of gzip inflate to at most " +
                 std::to_string(1032 * gz.size())) != std::string::npos);

  // A gzip stream that holds more than its IDX header declares: refused after one byte more.
  const Bytes more = gzip_bytes(idx_file(0x08, {2, 2}, counting(40)));
  const std::string more_msg = error_of(dir, "more.gz", more);
  INFO(more_msg);
  CHECK(more_msg.find("more.gz (after gunzip): unexpected trailing bytes after the last element") != std::string::npos);
  CHECK(more_msg.find("byte offset 16") != std::string::npos);  // 12 header + 4 elements
}

TEST_CASE("idx: a 6 GiB file and gzip bombs are refused from the header, in under a second and 100 MB") {
  // Sparse files (ftruncate) cost no disk; the files live in the working folder (the build
  // tree under ctest). Each read runs in a child with its address space limited to what it
  // has plus 100 MB: reading or inflating the whole file would fail there with bad_alloc.
  TempDir dir(".");
  const uint64_t six_gib = uint64_t(6) << 30;
  auto sparse = [&](const std::string& name, const Bytes& head) {
    const std::string path = dir.path + "/" + name;
    write_bytes(path, head);
    REQUIRE(::truncate(path.c_str(), off_t(six_gib)) == 0);
    return path;
  };
  // A gzip bomb: a first member holding only the IDX header, then 800 members of 8 MiB of
  // zeros each (8 KB compressed): 6.3 GiB of zeros from a file of about 7 MB.
  auto bomb = [&](const std::string& name, const Bytes& head) {
    const std::string path = dir.path + "/" + name;
    Bytes file = gzip_bytes(head);
    const Bytes zeros = gzip_bytes(Bytes(size_t(8) << 20, 0), 9);
    for (int i = 0; i < 800; ++i) file.insert(file.end(), zeros.begin(), zeros.end());
    write_bytes(path, file);
    return path;
  };
  const struct { std::string path, expect; } cases[] = {
      // A FashionMNIST header followed by 6 GiB: the size decides, no data is read.
      {sparse("header_then_6gib", idx_file(0x08, {60000, 28, 28}, {})), "unexpected trailing bytes"},
      // A header that claims the 6 GiB: beyond the 1 GiB limit.
      {sparse("claims_6gib", idx_file(0x08, {1572864, 64, 64}, {})), "more than the limit"},
      // No header at all: 6 GiB of zeros.
      {sparse("zeros_6gib", {}), "unknown IDX element type 0x00"},
      // A bomb whose header claims FashionMNIST's test images (7.8 MB): inflated up to that,
      // one byte more, refused.
      {bomb("bomb_small_claim.gz", idx_file(0x08, {10000, 28, 28}, {})), "unexpected trailing bytes"},
      // A bomb whose header claims 2^24 images: beyond the limits, nothing is inflated.
      {bomb("bomb_big_claim.gz", idx_file(0x08, {1u << 24, 28, 28}, {})), "more than the limit"},
  };
  for (const auto& c : cases) {
    const ChildResult r = run_limited([&] { hg::data::read_idx(c.path); }, size_t(100) << 20, 20);
    INFO(c.path << ": " << outcome_name(r.outcome) << ": " << r.message << " (" << r.cpu_seconds << " s CPU)");
    CHECK(r.outcome == ChildResult::Refused);
    CHECK(r.message.find(c.path) != std::string::npos);
    CHECK(r.message.find(c.expect) != std::string::npos);
    CHECK(r.cpu_seconds < 0.5);
  }
}
