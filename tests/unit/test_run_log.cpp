// The run log: run.json and events.jsonl written exactly per docs/run-log.md, every line
// flushed as it is written, non-finite numbers kept, and a reader that tolerates a run still
// being written (half a last line) and counts damaged lines.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/io/atomic_file.h"
#include "framework/io/run_log.h"

using nlohmann::json;

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/hg_test_runlog_XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

json counts57() { return json(std::vector<int>(57, 0)); }

json hist_fields() {
  return {{"param", "fc1.weight"}, {"scale", 65536.0}, {"exp_min", -40}, {"exp_max", 16},
          {"counts", counts57()},  {"below", 0},       {"above", 0},     {"zeros", 12},
          {"fp16_underflow", 3},   {"fp16_subnormal", 140}, {"fp16_overflow", 0},
          {"inf", 0},              {"nan", 0},         {"total", 401408},
          {"lost_update_fraction", 0.31}};
}
}  // namespace

TEST_CASE("run log: run.json and the events match the documented schema") {
  TempDir dir;
  const std::string run_dir = dir.path + "/runs/02_mlp_fp32";  // parents are created
  {
    hg::io::RunLog log(run_dir, {{"lesson", "02_fp32_training"}, {"model", "mlp"}, {"precision", "fp32"},
                                 {"device", "cpu"}, {"seed", 0},
                                 {"args", {{"epochs", 5}, {"batch_size", 128}, {"lr", 0.05}}}});
    const json run = hg::io::read_run_json(run_dir + "/run.json");
    CHECK(run["format"] == "halfgrad-run");
    CHECK(run["version"] == 1);
    CHECK(run["name"] == "02_mlp_fp32");
    CHECK(run["lesson"] == "02_fp32_training");
    CHECK(run["model"] == "mlp");
    CHECK(run["seed"] == 0);
    CHECK(run["args"]["batch_size"] == 128);
    CHECK(run["status"] == "running");
    CHECK(run["halfgrad"].get<std::string>().rfind("halfgrad ", 0) == 0);
    CHECK(std::regex_match(run["started"].get<std::string>(),
                           std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")));

    log.scalar(468, "test/accuracy", 0.8541, 1);
    log.scalar(469, "train/loss", 0.25);
    log.loss_scale(1203, 32768.0, true, true);
    log.grad_hist(50, hist_fields());
    log.note(1300, "switched to BF16");

    // Flushed line by line: a reader sees every event while the run is still going.
    const hg::io::EventLog live = hg::io::read_events(run_dir + "/events.jsonl");
    CHECK(live.events.size() == 5);
    log.end("finished");
  }
  const std::vector<std::string> lines = lines_of(run_dir + "/events.jsonl");
  REQUIRE(lines.size() == 6);
  // The example lines of docs/run-log.md, as JSON values (key order does not matter).
  CHECK(json::parse(lines[0]) == json::parse(R"({"type":"scalar","step":468,"epoch":1,"name":"test/accuracy","value":0.8541})"));
  CHECK(json::parse(lines[1]) == json::parse(R"({"type":"scalar","step":469,"name":"train/loss","value":0.25})"));
  CHECK(json::parse(lines[2]) == json::parse(R"({"type":"loss_scale","step":1203,"scale":32768.0,"found_inf":true,"skipped":true})"));
  json hist = hist_fields();
  hist["type"] = "grad_hist";
  hist["step"] = 50;
  CHECK(json::parse(lines[3]) == hist);
  CHECK(json::parse(lines[4]) == json::parse(R"({"type":"note","step":1300,"text":"switched to BF16"})"));
  CHECK(json::parse(lines[5]) == json::parse(R"({"type":"end","step":1300,"status":"finished"})"));
  const json run = hg::io::read_run_json(run_dir + "/run.json");
  CHECK(run["status"] == "finished");
  CHECK(run.contains("ended"));
}

TEST_CASE("run log: NaN and infinity are kept as strings, and read back") {
  TempDir dir;
  {
    hg::io::RunLog log(dir.path + "/r", json::object());
    log.scalar(0, "train/loss", std::nan(""));
    log.scalar(1, "train/loss", INFINITY);
    log.scalar(2, "train/loss", -INFINITY);
    log.loss_scale(3, INFINITY, true, true);
  }
  const hg::io::EventLog ev = hg::io::read_events(dir.path + "/r/events.jsonl");
  REQUIRE(ev.events.size() == 5);  // 4 + end
  CHECK(ev.events[0]["value"] == "nan");
  CHECK(std::isnan(hg::io::event_number(ev.events[0]["value"])));
  CHECK(hg::io::event_number(ev.events[1]["value"]) == INFINITY);
  CHECK(hg::io::event_number(ev.events[2]["value"]) == -INFINITY);
  CHECK(hg::io::event_number(ev.events[3]["scale"]) == INFINITY);
  CHECK(hg::io::event_number(json(0.5)) == 0.5);
  CHECK_THROWS(hg::io::event_number(json("half")));
}

TEST_CASE("run log: grad_hist refuses a histogram that breaks the schema") {
  TempDir dir;
  hg::io::RunLog log(dir.path + "/r", json::object());
  json missing = hist_fields();
  missing.erase("fp16_subnormal");
  try {
    log.grad_hist(0, missing);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("fp16_subnormal") != std::string::npos);
  }
  json short_counts = hist_fields();
  short_counts["counts"] = json(std::vector<int>(56, 0));
  CHECK_THROWS_AS(log.grad_hist(0, short_counts), std::invalid_argument);
  json no_lost = hist_fields();
  no_lost.erase("lost_update_fraction");  // optional
  CHECK_NOTHROW(log.grad_hist(0, no_lost));
}

TEST_CASE("run log: an exception that unwinds past the log marks the run failed") {
  TempDir dir;
  try {
    hg::io::RunLog log(dir.path + "/r", json::object());
    log.scalar(7, "train/loss", 1.0);
    throw std::runtime_error("diverged");
  } catch (const std::runtime_error&) {
  }
  CHECK(hg::io::read_run_json(dir.path + "/r/run.json")["status"] == "failed");
  const hg::io::EventLog ev = hg::io::read_events(dir.path + "/r/events.jsonl");
  REQUIRE(ev.events.size() == 2);
  CHECK(ev.events[1] == json::parse(R"({"type":"end","step":7,"status":"failed"})"));
}

TEST_CASE("run log: append continues a run, a fresh log starts over") {
  TempDir dir;
  { hg::io::RunLog(dir.path + "/r", json::object()).scalar(0, "a", 1); }
  { hg::io::RunLog(dir.path + "/r", json::object(), /*append=*/true).scalar(1, "a", 2); }
  CHECK(hg::io::read_events(dir.path + "/r/events.jsonl").events.size() == 4);  // 2 scalars, 2 ends
  { hg::io::RunLog(dir.path + "/r", json::object()).scalar(0, "a", 1); }
  CHECK(hg::io::read_events(dir.path + "/r/events.jsonl").events.size() == 2);
}

TEST_CASE("read_events: half a last line, damaged lines and unknown types") {
  TempDir dir;
  const std::string path = dir.path + "/events.jsonl";
  {
    std::ofstream out(path);
    out << R"({"type":"scalar","step":0,"name":"train/loss","value":2.3})" << "\n";
    out << R"({"type":"scalar","step":1,"name":"train/lo)" << "\n";  // damaged
    out << "\n";                                                       // blank: skipped
    out << R"([1, 2, 3])" << "\n";                                     // JSON, but no event
    out << R"({"type":"future_event","step":2,"x":1})" << "\n";       // unknown: counted, kept
    out << R"({"type":"scalar","step":3,"name":"train/loss","value":2.1})" << "\n";
    out << R"({"type":"scalar","step":4,"na)";                        // being written
  }
  const hg::io::EventLog ev = hg::io::read_events(path);
  CHECK(ev.events.size() == 3);
  CHECK(ev.corrupt_lines == 2);
  CHECK(ev.partial_last_line);
  CHECK(ev.unknown_types == 1);
  CHECK(ev.events[2]["step"] == 3);

  {
    std::ofstream out(path, std::ios::app);
    out << R"(me":"train/loss","value":2.0})" << "\n";  // the writer finishes the line
  }
  const hg::io::EventLog done = hg::io::read_events(path);
  CHECK(done.events.size() == 4);
  CHECK(!done.partial_last_line);
  CHECK_THROWS_AS(hg::io::read_events(dir.path + "/none.jsonl"), std::runtime_error);
}

// ---- bad input: a half line, a full disk, numbers JSON cannot hold --------------------------

namespace {
std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs fn with stderr sent into a pipe (not a file: a test may limit file sizes); returns
// what was written there (up to the pipe's 64 KB).
template <class Fn>
std::string capture_stderr(Fn fn) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(fds[1], 2);
  ::close(fds[1]);
  fn();
  std::fflush(stderr);
  ::dup2(saved, 2);  // closes the pipe's last write end: the read below ends
  ::close(saved);
  std::string out;
  char buf[4096];
  for (ssize_t k; (k = ::read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(k));
  ::close(fds[0]);
  return out;
}
}  // namespace

TEST_CASE("run log: a resumed log starts on a fresh line after a half line, the reader counts it corrupt") {
  TempDir dir;
  const std::string events = dir.path + "/r/events.jsonl";
  {
    hg::io::RunLog log(dir.path + "/r", json::object());
    log.scalar(0, "train/loss", 2.3);
    log.scalar(1, "train/loss", 2.2);
  }
  // The disk filled in the middle of a line (then the run was killed).
  std::string text = file_text(events);
  text += R"({"type":"scalar","step":2,"name":"tra)";
  { std::ofstream(events, std::ios::binary | std::ios::trunc) << text; }
  CHECK(hg::io::read_events(events).partial_last_line);  // as far as a reader can tell: still being written

  { hg::io::RunLog(dir.path + "/r", json::object(), /*append=*/true).scalar(2, "train/loss", 2.1); }
  const hg::io::EventLog ev = hg::io::read_events(events);
  CHECK(ev.corrupt_lines == 1);  // the half line, now followed by more lines
  CHECK(!ev.partial_last_line);
  REQUIRE(ev.events.size() == 5);  // 2 scalars + end, then the resumed scalar + end
  CHECK(ev.events[3] == json::parse(R"({"type":"scalar","step":2,"name":"train/loss","value":2.1})"));
  const std::vector<std::string> lines = lines_of(events);
  REQUIRE(lines.size() == 6);
  CHECK(lines[3] == R"({"type":"scalar","step":2,"name":"tra)");  // a line of its own

  // A log that ends with a newline gets none added.
  const size_t size = file_text(events).size();
  { hg::io::RunLog(dir.path + "/r", json::object(), /*append=*/true); }
  const std::string after = file_text(events);
  CHECK(after.substr(size).find("\n\n") == std::string::npos);
  CHECK(hg::io::read_events(events).corrupt_lines == 1);
}

TEST_CASE("run log: a failed write of an event warns once, loses no line, and the run goes on") {
  TempDir dir;
  const std::string events = dir.path + "/r/events.jsonl";
  hg::io::RunLog log(dir.path + "/r", json::object());
  log.scalar(0, "train/loss", 2.3);
  const size_t good_size = file_text(events).size();

  // RLIMIT_FSIZE makes write() fail with EFBIG part-way into the next line: a disk that
  // fills mid-line. SIGXFSZ would kill the process; ignored, write() returns the error.
  struct rlimit old;
  REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = good_size + 20;  // room for 20 bytes of the next line
  REQUIRE(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  const std::string warnings = capture_stderr([&] {
    CHECK_NOTHROW(log.scalar(1, "train/loss", 2.2));
    CHECK_NOTHROW(log.scalar(2, "train/loss", 2.1));
    CHECK_NOTHROW(log.note(2, "still going"));
  });
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
  INFO(warnings);
  CHECK(warnings == "warning: cannot append to " + events + ": File too large; training goes on, but "
                    "events are missing from the log from step 1 on\n");  // once
  CHECK(file_text(events).size() == good_size);  // the partial line was taken back

  log.scalar(3, "train/loss", 2.0);  // room again: the log goes on
  log.end("finished");
  const hg::io::EventLog ev = hg::io::read_events(events);
  CHECK(ev.corrupt_lines == 0);
  CHECK(!ev.partial_last_line);
  CHECK(ev.events.size() == 3);  // steps 0 and 3, and the end
  CHECK(hg::io::read_run_json(dir.path + "/r/run.json")["events_dropped"] == 3);
}

TEST_CASE("run log: non-finite numbers in any field (and in run.json) become strings, bytes that are not UTF-8 do not throw") {
  TempDir dir;
  {
    hg::io::RunLog log(dir.path + "/r", {{"args", {{"lr", NAN}}}});
    CHECK(hg::io::read_run_json(dir.path + "/r/run.json")["args"]["lr"] == "nan");  // not null
    log.event("custom", 4, {{"x", NAN}, {"list", {1.5, INFINITY, -INFINITY}}, {"nested", {{"y", NAN}}}});
    CHECK_NOTHROW(log.note(4, std::string("bad \xff\xfe bytes")));
  }
  const std::vector<std::string> lines = lines_of(dir.path + "/r/events.jsonl");
  REQUIRE(lines.size() == 3);
  CHECK(json::parse(lines[0]) ==
        json::parse(R"({"type":"custom","step":4,"list":[1.5,"inf","-inf"],"nested":{"y":"nan"},"x":"nan"})"));
  CHECK(lines[0].find("null") == std::string::npos);
  CHECK(json::parse(lines[1])["text"] == "bad \xef\xbf\xbd\xef\xbf\xbd bytes");  // U+FFFD twice
}

TEST_CASE("run log: run.json is replaced atomically, a failed rewrite at the end keeps the previous one") {
  TempDir dir;
  hg::io::RunLog log(dir.path + "/r", {{"lesson", "x"}});
  const std::string run_json = dir.path + "/r/run.json";
  const std::string before = file_text(run_json);
  // A folder squatting on the temporary name makes the rewrite fail, as a full disk would.
  REQUIRE(::mkdir(hg::io::atomic_temp_path(run_json).c_str(), 0755) == 0);
  const std::string warnings = capture_stderr([&] { CHECK_NOTHROW(log.end("finished")); });
  INFO(warnings);
  CHECK(warnings.find("warning: cannot write " + run_json) == 0);
  CHECK(file_text(run_json) == before);  // whole, and still "running"
  CHECK(hg::io::read_run_json(run_json)["status"] == "running");
  ::rmdir(hg::io::atomic_temp_path(run_json).c_str());
}

TEST_CASE("read_events: a line longer than the limit is corrupt and skipped, a folder is refused") {
  TempDir dir;
  const std::string path = dir.path + "/events.jsonl";
  {
    std::ofstream out(path, std::ios::binary);
    out << R"({"type":"scalar","step":0,"name":"a","value":1})" << "\n";
    out << R"({"type":"note","step":1,"text":")" << std::string(hg::io::kMaxEventLineBytes + 10, 'x') << "\"}\n";
    out << R"({"type":"scalar","step":2,"name":"a","value":2})" << "\n";
  }
  const hg::io::EventLog ev = hg::io::read_events(path);
  CHECK(ev.events.size() == 2);
  CHECK(ev.corrupt_lines == 1);
  CHECK(ev.events[1]["step"] == 2);
  CHECK_THROWS_WITH_AS(hg::io::read_events(dir.path), (dir.path + " is a folder, not a file").c_str(),
                       std::runtime_error);
}
