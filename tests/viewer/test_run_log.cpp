// The viewer's run-log reader (viewer/run_log.h): every event type, a half-written last line,
// corrupt lines, unknown types, an empty file, a folder without run.json, a rewritten file —
// each gives the behaviour documented in viewer/run_log.h. Also checks the synthetic demo
// runs against the schema's own arithmetic (docs/run-log.md).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "viewer/demo_run.h"
#include "viewer/run_log.h"

namespace fs = std::filesystem;
using namespace hg::viewer;

namespace {

// A fresh, empty folder per test case.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() /
           ("hg_viewer_test_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string str() const { return path.string(); }
};

void write(const fs::path& p, const std::string& text, bool append = false) {
  std::ofstream out(p, append ? std::ios::binary | std::ios::app : std::ios::binary);
  out << text;
}

const char* kRunJson = R"({"format":"halfgrad-run","version":1,"name":"02_mlp_fp32",
  "lesson":"02_fp32_training","model":"mlp","precision":"fp32","device":"cpu","seed":0,
  "status":"running"})";

std::string grad_hist_line(int64_t step) {
  // 57 bins (-40..16); 3 values at 2^-30, 5 at 2^-20, 7 at 2^0.
  std::string counts;
  for (int e = -40; e <= 16; ++e) {
    int c = e == -30 ? 3 : e == -20 ? 5 : e == 0 ? 7 : 0;
    counts += (e == -40 ? "" : ",") + std::to_string(c);
  }
  return R"({"type":"grad_hist","step":)" + std::to_string(step) +
         R"(,"param":"fc1.weight","scale":1024.0,"exp_min":-40,"exp_max":16,"counts":[)" + counts +
         R"(],"below":1,"above":2,"zeros":12,"fp16_underflow":4,"fp16_subnormal":5,)"
         R"("fp16_overflow":2,"inf":0,"nan":1,"total":31,"lost_update_fraction":0.31})";
}

}  // namespace

TEST_CASE("every event type is read into its place") {
  TempDir d("types");
  write(d.path / "run.json", kRunJson);
  write(d.path / "events.jsonl",
        R"({"type":"scalar","step":468,"epoch":1,"name":"test/accuracy","value":0.8541})" "\n"
        R"({"type":"scalar","step":469,"name":"train/loss","value":0.5})" "\n"
        R"({"type":"loss_scale","step":1203,"scale":32768.0,"found_inf":true,"skipped":true})" "\n" +
        grad_hist_line(50) + "\n" +
        R"({"type":"note","step":7,"text":"switched to BF16"})" "\n"
        R"({"type":"end","step":1300,"status":"finished"})" "\n");
  RunReader r(d.str());
  CHECK(r.poll());
  const RunData& run = r.data();
  CHECK(run.run_json_error.empty());
  CHECK(run.name == "02_mlp_fp32");
  CHECK(run.run_json["precision"] == "fp32");
  CHECK_FALSE(run.synthetic);
  CHECK(run.lines == 6);
  CHECK(run.events == 6);
  CHECK(run.corrupt_lines == 0);
  CHECK(run.unknown_types == 0);

  REQUIRE(run.scalars.count("test/accuracy") == 1);
  CHECK(run.scalars.at("test/accuracy")[0].step == 468);
  CHECK(run.scalars.at("test/accuracy")[0].value == doctest::Approx(0.8541));
  CHECK(run.scalars.at("train/loss")[0].value == 0.5);

  REQUIRE(run.loss_scale.size() == 1);
  CHECK(run.loss_scale[0].step == 1203);
  CHECK(run.loss_scale[0].scale == 32768.0);
  CHECK(run.loss_scale[0].found_inf);
  CHECK(run.loss_scale[0].skipped);

  REQUIRE(run.params == std::vector<std::string>{"fc1.weight"});
  const GradHist& h = run.grads.at("fc1.weight").at(0);
  CHECK(h.step == 50);
  CHECK(h.scale == 1024.0);
  CHECK(h.exp_min == -40);
  CHECK(h.exp_max == 16);
  REQUIRE(h.counts.size() == 57);
  CHECK(h.counts[-30 + 40] == 3);
  CHECK(h.counts[-20 + 40] == 5);
  CHECK(h.counts[0 + 40] == 7);
  CHECK(h.below == 1);
  CHECK(h.above == 2);
  CHECK(h.zeros == 12);
  CHECK(h.fp16_underflow == 4);
  CHECK(h.fp16_subnormal == 5);
  CHECK(h.fp16_overflow == 2);
  CHECK(h.nan == 1);
  CHECK(h.total == 31);
  CHECK(h.lost_update_fraction == doctest::Approx(0.31));

  REQUIRE(run.notes.size() == 1);
  CHECK(run.notes[0].step == 7);
  CHECK(run.notes[0].text == "switched to BF16");
  CHECK(run.end_status == "finished");
  CHECK(run.max_step == 1300);
}

TEST_CASE("a half-written last line waits for its end, then is read once") {
  TempDir d("partial");
  write(d.path / "run.json", kRunJson);
  const std::string line3 = R"({"type":"scalar","step":2,"name":"train/loss","value":0.25})";
  write(d.path / "events.jsonl",
        R"({"type":"scalar","step":0,"name":"train/loss","value":1.0})" "\n"
        R"({"type":"scalar","step":1,"name":"train/loss","value":0.5})" "\n" +
        line3.substr(0, 20));  // the writer stopped mid-line
  RunReader r(d.str());
  r.poll();
  CHECK(r.data().scalars.at("train/loss").size() == 2);
  CHECK(r.data().corrupt_lines == 0);
  CHECK(r.data().pending_bytes == 20);

  CHECK_FALSE(r.poll());  // nothing new: nothing changes
  CHECK(r.data().pending_bytes == 20);

  write(d.path / "events.jsonl", line3.substr(20) + "\n", /*append=*/true);
  CHECK(r.poll());
  const auto& loss = r.data().scalars.at("train/loss");
  REQUIRE(loss.size() == 3);
  CHECK(loss[2].step == 2);
  CHECK(loss[2].value == 0.25);
  CHECK(r.data().pending_bytes == 0);
  CHECK(r.data().corrupt_lines == 0);
  CHECK(r.data().lines == 3);
}

TEST_CASE("a complete last line without a newline is taken, and its late newline is harmless") {
  TempDir d("nonewline");
  write(d.path / "events.jsonl", R"({"type":"end","step":9,"status":"failed"})");
  RunReader r(d.str());
  r.poll();
  CHECK(r.data().end_status == "failed");
  CHECK(r.data().pending_bytes == 0);
  write(d.path / "events.jsonl", "\n", true);
  r.poll();
  CHECK(r.data().lines == 1);
  CHECK(r.data().corrupt_lines == 0);
}

TEST_CASE("corrupt lines are counted with their line numbers and skipped") {
  TempDir d("corrupt");
  std::string bad_hist = grad_hist_line(3);
  bad_hist.replace(bad_hist.find("[0,"), 3, "[");  // 56 counts instead of 57
  write(d.path / "events.jsonl",
        R"({"type":"scalar","step":0,"name":"train/loss","value":1.0})" "\n"
        "this is not json\n"
        "[1,2,3]\n"
        R"({"type":"scalar","step":1})" "\n"
        R"({"step":1,"name":"x","value":2})" "\n" +
        bad_hist + "\n"
        "\r\n"
        R"({"type":"scalar","step":2,"name":"train/loss","value":0.5})" "\r\n");
  RunReader r(d.str());
  r.poll();
  const RunData& run = r.data();
  CHECK(run.corrupt_lines == 5);
  CHECK(run.lines == 7);  // the blank line is not counted
  CHECK(run.events == 2);
  CHECK(run.scalars.at("train/loss").size() == 2);  // the CRLF line is fine
  CHECK(run.grads.empty());
  REQUIRE(run.problems.size() == 5);
  CHECK(run.problems[0] == "line 2: not valid JSON");
  CHECK(run.problems[1] == "line 3: not a JSON object");
  CHECK(run.problems[2].rfind("line 4: scalar without", 0) == 0);
  CHECK(run.problems[3].rfind("line 5: no \"type\"", 0) == 0);
  CHECK(run.problems[4].find("56 entries, expected 57") != std::string::npos);
}

TEST_CASE("non-finite numbers written as \"nan\"/\"inf\" strings (or null) are read") {
  TempDir d("nonfinite");
  write(d.path / "events.jsonl",
        R"({"type":"scalar","step":0,"name":"train/loss","value":"nan"})" "\n"
        R"({"type":"scalar","step":1,"name":"train/loss","value":null})" "\n"
        R"({"type":"scalar","step":2,"name":"train/loss","value":"-inf"})" "\n"
        R"({"type":"loss_scale","step":3,"scale":"inf","found_inf":true,"skipped":true})" "\n"
        R"({"type":"scalar","step":4,"name":"train/loss","value":"a lot"})" "\n");
  RunReader r(d.str());
  r.poll();
  const auto& loss = r.data().scalars.at("train/loss");
  REQUIRE(loss.size() == 3);
  CHECK(std::isnan(loss[0].value));
  CHECK(std::isnan(loss[1].value));
  CHECK(loss[2].value == -INFINITY);
  REQUIRE(r.data().loss_scale.size() == 1);
  CHECK(r.data().loss_scale[0].scale == INFINITY);
  CHECK(r.data().corrupt_lines == 1);  // "a lot" is not a number
}

TEST_CASE("unknown event types are counted, not failed") {
  TempDir d("unknown");
  write(d.path / "events.jsonl",
        R"({"type":"gpu_temperature","step":3,"celsius":71})" "\n"
        R"({"type":"note","step":4,"text":"ok","new_field":[1,2]})" "\n");
  RunReader r(d.str());
  r.poll();
  CHECK(r.data().unknown_types == 1);
  CHECK(r.data().corrupt_lines == 0);
  CHECK(r.data().notes.size() == 1);  // unknown keys inside a known type are ignored
}

TEST_CASE("an empty events file, and a folder with neither file") {
  TempDir d("empty");
  write(d.path / "run.json", kRunJson);
  write(d.path / "events.jsonl", "");
  RunReader r(d.str());
  r.poll();
  CHECK(r.caught_up());
  CHECK(r.data().lines == 0);
  CHECK(r.data().events == 0);
  CHECK(r.data().corrupt_lines == 0);
  CHECK(r.data().end_status.empty());
  CHECK(r.data().max_step == -1);

  TempDir e("nothing");
  RunReader r2(e.str());
  r2.poll();
  CHECK(r2.data().events == 0);
  CHECK_FALSE(is_run_dir(e.str()));
}

TEST_CASE("a run folder with no run.json: named after the folder, events still read") {
  TempDir d("norunjson");
  fs::create_directories(d.path / "my_run");
  write(d.path / "my_run" / "events.jsonl",
        R"({"type":"scalar","step":0,"name":"train/loss","value":2.3})" "\n");
  RunReader r((d.path / "my_run").string());
  r.poll();
  CHECK(r.data().name == "my_run");
  CHECK(r.data().run_json.is_null());
  CHECK(r.data().run_json_error.find("no run.json") != std::string::npos);
  CHECK(r.data().scalars.at("train/loss").size() == 1);
  CHECK(is_run_dir((d.path / "my_run").string()));
  CHECK(list_run_dirs(d.str()) == std::vector<std::string>{(d.path / "my_run").string()});

  // A run.json that is not JSON: the parser's message, and the run still opens.
  write(d.path / "my_run" / "run.json", "{\"name\": ");
  RunReader r3((d.path / "my_run").string());
  r3.poll();
  CHECK(r3.data().run_json.is_null());
  CHECK(r3.data().run_json_error.find("run.json") != std::string::npos);
  CHECK(r3.data().scalars.at("train/loss").size() == 1);
}

TEST_CASE("a file that shrank (rewritten) is read again from the start") {
  TempDir d("shrink");
  write(d.path / "events.jsonl",
        R"({"type":"scalar","step":0,"name":"train/loss","value":2.0})" "\n"
        R"({"type":"scalar","step":1,"name":"train/loss","value":1.0})" "\n");
  RunReader r(d.str());
  r.poll();
  CHECK(r.data().scalars.at("train/loss").size() == 2);
  write(d.path / "events.jsonl", R"({"type":"note","step":0,"text":"new"})" "\n");
  r.poll();
  CHECK(r.data().scalars.count("train/loss") == 0);
  CHECK(r.data().notes.size() == 1);
  CHECK(r.data().restarts == 1);
}

TEST_CASE("reading in small chunks gives the same run as reading at once") {
  TempDir d("chunks");
  DemoOptions opt;
  opt.steps = 400;
  opt.hist_every = 50;
  make_demo_run((d.path / "demo").string(), "dynamic_scale", opt);
  RunReader whole((d.path / "demo").string());
  whole.poll();
  RunReader bits((d.path / "demo").string());
  int polls = 0;
  do {
    bits.poll(777);  // a prime number of bytes: lines are cut everywhere
    ++polls;
  } while (!bits.caught_up());
  CHECK(polls > 10);
  const RunData &a = whole.data(), &b = bits.data();
  CHECK(a.corrupt_lines == 0);
  CHECK(b.corrupt_lines == 0);
  CHECK(a.events == b.events);
  CHECK(a.loss_scale.size() == b.loss_scale.size());
  CHECK(a.params == b.params);
  CHECK(a.scalars.at("train/loss").size() == b.scalars.at("train/loss").size());
  CHECK(a.grads.at("fc1.weight").back().counts == b.grads.at("fc1.weight").back().counts);
}

TEST_CASE("synthetic demo runs obey the schema's arithmetic and the scaler's rules") {
  TempDir d("demo");
  DemoOptions opt;
  opt.steps = 4500;
  auto dirs = make_demo_runs(d.str(), opt);
  REQUIRE(dirs.size() == 6);
  const double min_sub = std::ldexp(1.0, -24), min_norm = std::ldexp(1.0, -14);  // IEEE binary16
  for (const auto& dir : dirs) {
    CAPTURE(dir);
    RunReader r(dir);
    r.poll();
    const RunData& run = r.data();
    CHECK(run.synthetic);  // demo data always says so
    CHECK(run.corrupt_lines == 0);
    CHECK(run.unknown_types == 0);
    CHECK(run.end_status == "finished");
    CHECK(run.scalars.at("train/loss").size() == 4500);
    REQUIRE(run.params.size() == 8);
    for (const auto& [param, hists] : run.grads) {
      CHECK(hists.size() == 90);  // every 50 steps
      for (const auto& h : hists) {
        int64_t sum = h.below + h.above + h.zeros + h.inf + h.nan, under = h.below, sub = 0;
        for (size_t i = 0; i < h.counts.size(); ++i) {
          sum += h.counts[i];
          double lo = std::ldexp(1.0, h.exp_min + static_cast<int>(i));  // bin [lo, 2lo)
          if (lo < min_sub) under += h.counts[i];
          else if (lo < min_norm) sub += h.counts[i];
        }
        REQUIRE(sum == h.total);
        REQUIRE(under == h.fp16_underflow);
        REQUIRE(sub == h.fp16_subnormal);
      }
    }
    const auto& ls = run.loss_scale;
    const std::string precision = run.run_json["precision"];
    if (precision == "dynamic_scale" || precision == "amp_f16") {
      REQUIRE(ls.size() == 4500);
      CHECK(ls[0].scale == 65536.0);
      int skipped = 0, grown = 0;
      for (size_t i = 1; i < ls.size(); ++i) {
        if (ls[i - 1].skipped) {  // backoff x0.5 after an overflow
          ++skipped;
          REQUIRE(ls[i].scale == ls[i - 1].scale * 0.5);
        } else if (ls[i].scale != ls[i - 1].scale) {
          ++grown;
          REQUIRE(ls[i].scale == ls[i - 1].scale * 2.0);
        }
      }
      CHECK(skipped > 0);
      CHECK(grown > 0);
    } else if (precision == "static_scale") {
      CHECK(ls.front().scale == ls.back().scale);
    } else {
      CHECK(ls.empty());
    }
  }
}

TEST_CASE("a run being written live is followed as it grows") {
  TempDir d("live");
  DemoOptions opt;
  opt.steps = 60;
  opt.hist_every = 10;
  opt.live_steps_per_second = 40;  // 1.5 s in all
  const std::string dir = (d.path / "live").string();
  std::thread writer([&] { make_demo_run(dir, "dynamic_scale", opt); });
  // Poll the way the viewer does (every 250 ms) and record the last step seen each time.
  RunReader r(dir);
  std::vector<int64_t> seen;
  int64_t corrupt_while_running = 0;
  for (int i = 0; i < 40 && r.data().end_status.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    r.poll();
    seen.push_back(r.data().max_step);
    corrupt_while_running = std::max(corrupt_while_running, r.data().corrupt_lines);
  }
  writer.join();
  r.poll();
  std::string trace;
  for (auto s : seen) trace += std::to_string(s) + " ";
  CAPTURE(trace);
  std::vector<int64_t> distinct(seen.begin(), seen.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  CHECK(distinct.size() >= 3);            // it grew while being written, not only at the end
  CHECK(std::is_sorted(seen.begin(), seen.end()));
  CHECK(corrupt_while_running == 0);      // half-written lines were waited for, not counted
  CHECK(r.data().end_status == "finished");
  CHECK(r.data().scalars.at("train/loss").size() == 60);
  CHECK(r.data().run_json["status"] == "finished");
}
