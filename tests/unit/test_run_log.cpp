// The run log: run.json and events.jsonl written exactly per docs/run-log.md, every line
// flushed as it is written, non-finite numbers kept, and a reader that tolerates a run still
// being written (half a last line) and counts damaged lines.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

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
