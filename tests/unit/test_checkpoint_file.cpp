// The checkpoint container: round trip of every dtype, the byte layout against an independent
// reading, and refusal of every truncated or corrupted file with a reason naming the file.
// A failed save (blocked temporary file, file-size limit mid-write, missing folder) must leave
// the previous checkpoint byte-for-byte intact.
#include <doctest/doctest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "framework/io/atomic_file.h"
#include "framework/io/checkpoint.h"
#include "tests/unit/child_limits.h"

using hg::io::Checkpoint;

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/hg_test_ckpt_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("chmod -R u+w '" + path + "'; rm -rf '" + path + "'").c_str()); }
};

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Checkpoint sample(float offset = 0.0f) {
  Checkpoint c;
  c.meta = {{"step", 1234},
            {"epoch", 3},
            {"args", {{"lr", 0.05}, {"model", "mlp"}}},
            {"rng", {{"state", 0xFEDCBA9876543210ull}, {"inc", 7}}}};
  std::vector<float> w(6);
  for (int i = 0; i < 6; ++i) w[size_t(i)] = 0.5f * float(i) - 1.0f + offset;
  c.add("model.fc1.weight", "f32", {2, 3}, w.data(), w.size() * 4);
  const double lr = 0.05;
  c.add("optim.lr", "f64", {}, &lr, 8);  // a scalar: shape ()
  const uint16_t halves[3] = {0x3C00, 0x7BFF, 0x0001};  // 1, 65504, smallest subnormal
  c.add("model.fc1.weight_f16", "f16", {3}, halves, 6);
  const int64_t steps[2] = {-1, 1LL << 40};
  c.add("loader.state", "i64", {2}, steps, 16);
  c.add("empty", "f32", {0, 5}, nullptr, 0);
  return c;
}

std::string load_error(const std::string& path) {
  try {
    hg::io::load_checkpoint(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("checkpoint: every entry and the metadata survive a round trip") {
  TempDir dir;
  const std::string path = dir.path + "/ckpt.hgc";
  const Checkpoint a = sample();
  hg::io::save_checkpoint(path, a);
  const Checkpoint b = hg::io::load_checkpoint(path);
  CHECK(b.source == path);
  CHECK(b.meta == a.meta);
  CHECK(b.meta["rng"]["state"].get<uint64_t>() == 0xFEDCBA9876543210ull);
  REQUIRE(b.entries().size() == a.entries().size());
  for (size_t i = 0; i < a.entries().size(); ++i) {
    const auto& x = a.entries()[i];
    const auto& y = b.entries()[i];
    CHECK(x.name == y.name);  // order is kept
    CHECK(x.dtype == y.dtype);
    CHECK(x.shape == y.shape);
    CHECK(x.bytes == y.bytes);
  }
  CHECK(b.at("optim.lr").shape.empty());
  CHECK(b.at("optim.lr").numel() == 1);
  CHECK(b.at("empty").numel() == 0);
  float w[6];
  b.copy_to("model.fc1.weight", "f32", {2, 3}, w, sizeof w);
  CHECK(w[5] == 1.5f);
  CHECK(!exists(hg::io::atomic_temp_path(path)));  // no temporary left behind
}

TEST_CASE("checkpoint: the byte layout is what checkpoint.h documents") {
  const std::vector<uint8_t> f = hg::io::encode_checkpoint(sample());
  REQUIRE(f.size() > 40);
  auto le = [&](size_t at, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t(f[at + size_t(i)]) << (8 * i);
    return v;
  };
  CHECK(std::memcmp(f.data(), "HGCKPT", 6) == 0);
  CHECK(le(6, 2) == hg::io::kCheckpointVersion);
  CHECK(le(8, 8) == f.size());
  const size_t meta_len = size_t(le(16, 8));
  const std::string meta(f.begin() + 24, f.begin() + 24 + long(meta_len));
  CHECK(nlohmann::json::parse(meta) == sample().meta);
  CHECK(le(24 + meta_len, 4) == 5);  // five entries
  // First entry: u16 name length, name, u8 dtype length, dtype, u8 ndim, dims, u64 nbytes, data.
  size_t p = 24 + meta_len + 4;
  CHECK(le(p, 2) == 16);
  CHECK(std::string(f.begin() + long(p + 2), f.begin() + long(p + 18)) == "model.fc1.weight");
  p += 18;
  CHECK(le(p, 1) == 3);
  CHECK(std::string(f.begin() + long(p + 1), f.begin() + long(p + 4)) == "f32");
  p += 4;
  CHECK(le(p, 1) == 2);
  CHECK(le(p + 1, 8) == 2);
  CHECK(le(p + 9, 8) == 3);
  CHECK(le(p + 17, 8) == 24);
  float first;
  std::memcpy(&first, &f[p + 25], 4);
  CHECK(first == -1.0f);
  // The last 4 bytes: zlib's CRC-32 of everything before them, computed here independently.
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), f.data(), uInt(f.size() - 4));
  CHECK(le(f.size() - 4, 4) == crc);
}

TEST_CASE("checkpoint: every truncation is refused with the file name and an offset") {
  TempDir dir;
  const std::vector<uint8_t> good = hg::io::encode_checkpoint(sample());
  const std::string path = dir.path + "/cut.hgc";
  for (size_t cut = 0; cut < good.size(); ++cut) {
    write_bytes(path, std::vector<uint8_t>(good.begin(), good.begin() + long(cut)));
    const std::string msg = load_error(path);
    INFO("cut at ", cut, ": ", msg);
    REQUIRE(!msg.empty());
    CHECK(msg.find(path) != std::string::npos);
    CHECK(msg.find("byte offset") != std::string::npos);
  }
  write_bytes(path, std::vector<uint8_t>(good.begin(), good.end() - 10));
  const std::string msg = load_error(path);
  INFO(msg);
  CHECK(msg.find("truncated") != std::string::npos);
}

TEST_CASE("checkpoint: every flipped byte is refused (magic, version, sizes or CRC)") {
  TempDir dir;
  const std::vector<uint8_t> good = hg::io::encode_checkpoint(sample());
  const std::string path = dir.path + "/flip.hgc";
  for (size_t at = 0; at < good.size(); ++at) {
    std::vector<uint8_t> bad = good;
    bad[at] ^= 0x04;
    write_bytes(path, bad);
    const std::string msg = load_error(path);
    INFO("flipped byte ", at, ": ", msg);
    REQUIRE(!msg.empty());
    CHECK(msg.find(path) != std::string::npos);
  }
  std::vector<uint8_t> bad = good;
  bad[0] = 'X';
  write_bytes(path, bad);
  CHECK(load_error(path).find("bad magic") != std::string::npos);
  bad = good;
  bad[6] = 2;  // version 2
  write_bytes(path, bad);
  CHECK(load_error(path).find("format version 2 (this build reads version 1)") != std::string::npos);
  bad = good;
  bad[40] ^= 1;  // inside the metadata
  write_bytes(path, bad);
  CHECK(load_error(path).find("CRC-32 mismatch") != std::string::npos);
  bad = good;
  bad.push_back(0);
  write_bytes(path, bad);
  CHECK(load_error(path).find("trailing bytes") != std::string::npos);
  CHECK(load_error(dir.path + "/none.hgc").find("cannot open checkpoint") != std::string::npos);
}

TEST_CASE("checkpoint: misuse of entries gives messages that name the entry") {
  Checkpoint c = sample();
  const float one = 1.0f;
  CHECK_THROWS_AS(c.add("model.fc1.weight", "f32", {}, &one, 4), std::invalid_argument);  // taken
  CHECK_THROWS_AS(c.add("x", "f32", {2}, &one, 4), std::invalid_argument);                // size
  CHECK_THROWS_AS(c.add("y", "q7", {}, &one, 4), std::invalid_argument);                  // dtype
  CHECK_THROWS_AS(c.add("", "f32", {}, &one, 4), std::invalid_argument);                  // name
  try {
    c.at("model.fc2.weight");
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("no entry 'model.fc2.weight'") != std::string::npos);
    CHECK(std::string(e.what()).find("model.fc1.weight") != std::string::npos);  // what there is
  }
  float w[6];
  try {
    c.copy_to("model.fc1.weight", "f32", {3, 2}, w, sizeof w);
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("f32 (2, 3), but f32 (3, 2) was expected") != std::string::npos);
  }
}

TEST_CASE("checkpoint: a failed save leaves the previous checkpoint intact") {
  TempDir dir;
  const std::string path = dir.path + "/model.hgc";
  hg::io::save_checkpoint(path, sample(0.0f));
  const std::vector<uint8_t> before = file_bytes(path);

  // A bigger checkpoint to save over it.
  Checkpoint bigger = sample(1.0f);
  std::vector<float> big(20000, 3.0f);
  bigger.add("model.big", "f32", {20000}, big.data(), big.size() * 4);

  SUBCASE("the temporary file cannot be created") {
    // A folder squatting on the temporary name makes open() fail (EISDIR), as a full or
    // read-only disk would.
    REQUIRE(::mkdir(hg::io::atomic_temp_path(path).c_str(), 0755) == 0);
    try {
      hg::io::save_checkpoint(path, bigger);
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(path) != std::string::npos);
      CHECK(std::string(e.what()).find("unchanged") != std::string::npos);
    }
    ::rmdir(hg::io::atomic_temp_path(path).c_str());
  }
  SUBCASE("the disk fills up in the middle of the write") {
    // RLIMIT_FSIZE makes write() fail with EFBIG past 4096 bytes: a disk full mid-write.
    // SIGXFSZ would kill the process; ignore it so write() returns the error instead.
    struct rlimit old;
    REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
    auto old_handler = signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = old;
    lim.rlim_cur = 4096;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    std::string msg;
    try {
      hg::io::save_checkpoint(path, bigger);
    } catch (const std::runtime_error& e) {
      msg = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    INFO(msg);
    CHECK(msg.find("write failed") != std::string::npos);
    CHECK(!exists(hg::io::atomic_temp_path(path)));  // the partial temporary is removed
  }
  SUBCASE("the folder does not exist") {
    CHECK_THROWS_AS(hg::io::save_checkpoint(dir.path + "/missing/model.hgc", bigger), std::runtime_error);
  }
  CHECK(file_bytes(path) == before);  // byte for byte
  CHECK(hg::io::load_checkpoint(path).meta["step"] == 1234);

  // And a save that works replaces it completely.
  hg::io::save_checkpoint(path, bigger);
  CHECK(hg::io::load_checkpoint(path).has("model.big"));
}

TEST_CASE("checkpoint: a save removes the temporaries of killed savers, and only those") {
  // What kill -9 during a save leaves: <path>.tmp.<pid> of a process that is gone. A pid
  // that is surely gone: a child that has exited and been waited for.
  auto dead_pid = [] {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    ::waitpid(pid, nullptr, 0);
    return long(pid);
  };
  // A concurrent saver of the same path: a live process (a child that waits to be killed).
  const pid_t live = ::fork();
  if (live == 0) {
    ::pause();
    ::_exit(0);
  }
  TempDir dir;
  const std::string path = dir.path + "/model.hgc";
  const std::vector<uint8_t> junk(1000, 0xAB);
  const std::string dead1 = path + ".tmp." + std::to_string(dead_pid());
  const std::string dead2 = path + ".tmp." + std::to_string(dead_pid());
  const std::string alive = path + ".tmp." + std::to_string(live);
  const std::string dead_folder = path + ".tmp." + std::to_string(dead_pid());   // not a file: kept
  const std::string other_target = dir.path + "/other.hgc.tmp." + std::to_string(dead_pid());
  const std::string not_a_pid = path + ".tmp.12x", leading_zero = path + ".tmp.0" + std::to_string(dead_pid());
  for (const std::string& f : {dead1, dead2, alive, other_target, not_a_pid, leading_zero}) write_bytes(f, junk);
  REQUIRE(::mkdir(dead_folder.c_str(), 0755) == 0);

  hg::io::save_checkpoint(path, sample());
  CHECK(!exists(dead1));
  CHECK(!exists(dead2));
  CHECK(exists(alive));         // a saver still at work keeps its temporary
  CHECK(exists(dead_folder));
  CHECK(exists(other_target));  // another target's: its own next save cleans it
  CHECK(exists(not_a_pid));
  CHECK(exists(leading_zero));  // not a name this code writes
  CHECK(hg::io::load_checkpoint(path).meta["step"] == 1234);
  CHECK(hg::io::remove_stale_temporaries(path) == 0);  // nothing left to remove

  ::kill(live, SIGKILL);
  ::waitpid(live, nullptr, 0);
  CHECK(hg::io::remove_stale_temporaries(path) == 1);  // now it is stale too
  CHECK(!exists(alive));
  ::rmdir(dead_folder.c_str());
}

TEST_CASE("checkpoint: a huge file is judged by its header before any of it is read") {
  // Sparse files (no disk used): 1 GiB of zeros, and 10 GiB that starts like a checkpoint of
  // version 1 but whose header claims another size. Loading either in a child allowed 100 MB
  // more than it has must refuse from the first 16 bytes, not allocate the file's size first.
  TempDir dir;
  const std::string zeros = dir.path + "/zeros.ckpt", claims = dir.path + "/claims.ckpt";
  auto sparse = [](const std::string& path, const std::vector<uint8_t>& head, off_t size) {
    write_bytes(path, head);
    REQUIRE(::truncate(path.c_str(), size) == 0);
  };
  sparse(zeros, {}, off_t(1) << 30);
  std::vector<uint8_t> head = {'H', 'G', 'C', 'K', 'P', 'T', 1, 0};
  for (int i = 0; i < 8; ++i) head.push_back(uint8_t(uint64_t(12345) >> (8 * i)));  // claims 12345 bytes
  sparse(claims, head, off_t(10) << 30);
  const struct { std::string path, why; } cases[] = {
      {zeros, "bad magic (expected \"HGCKPT\") at byte offset 0"},
      {claims, "the header says the file is 12345 bytes but it is 10737418240 (trailing bytes)"}};
  for (const auto& c : cases) {
    const ChildResult r = run_limited([&] { hg::io::load_checkpoint(c.path); }, size_t(100) << 20, 20);
    INFO(c.path << ": " << outcome_name(r.outcome) << ": " << r.message);
    CHECK(r.outcome == ChildResult::Refused);
    CHECK(r.message.find(c.path + ": not a valid checkpoint: ") == 0);
    CHECK(r.message.find(c.why) != std::string::npos);
  }
}
