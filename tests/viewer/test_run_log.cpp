// The viewer's run-log reader (viewer/run_log.h): every event type, a half-written last line,
// corrupt lines, unknown types, an empty file, a folder without run.json, a rewritten file —
// each gives the behaviour documented in viewer/run_log.h. Then the validation step, one test
// per class of field (steps, counts, exponents, scales, fractions, names and texts, the
// per-run caps) and a sweep that breaks every field with values of every kind; then the
// streaming reader's caps (line length, memory), odd run.json and events.jsonl files, a
// byte-order mark, and steps logged again. Also checks the synthetic demo runs against the
// schema's own arithmetic (docs/run-log.md).
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "framework/dtype/float_format.h"
#include "framework/fp8/linear.h"  // the writer of fp8_scale events
#include "framework/io/run_log.h"
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
  CHECK(run.problems[2] == "line 4: scalar name: missing");
  CHECK(run.problems[3] == "line 5: type: missing");
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

TEST_CASE("runs/ holding a data-parallel run: each rank is a run named <run>/rank<k>") {
  // Chapter 13 writes runs/<name>/rank<k>/; `./lab view` on runs/ must find those ranks
  // beside the ordinary runs, and name them so that two jobs' rank0 are told apart.
  TempDir d("ranks");
  const std::string line = R"({"type":"scalar","step":0,"name":"train/loss","value":2.0})" "\n";
  fs::create_directories(d.path / "plain");
  write(d.path / "plain" / "events.jsonl", line);
  for (const char* job : {"13_mlp_2ranks", "13_gpt_2ranks"})
    for (const char* rank : {"rank0", "rank1"}) {
      fs::create_directories(d.path / job / rank);
      write(d.path / job / rank / "events.jsonl", line);
      write(d.path / job / rank / "run.json", std::string(R"({"name":")") + rank + "\"}");  // as chapter 13 writes it
    }
  fs::create_directories(d.path / "empty" / "nothing_here");  // a folder with no runs: nothing
  fs::create_directories(d.path / "deep" / "a" / "rank0");    // runs two levels down: not looked for
  write(d.path / "deep" / "a" / "rank0" / "events.jsonl", line);
  const std::vector<std::string> dirs = list_run_dirs(d.str());
  std::vector<std::string> names;
  for (const std::string& dir : dirs) names.push_back(RunReader(dir).data().name);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"13_gpt_2ranks/rank0", "13_gpt_2ranks/rank1", "13_mlp_2ranks/rank0",
                                          "13_mlp_2ranks/rank1", "plain"});
  // Given the job's folder itself, the same ranks and names.
  names.clear();
  for (const std::string& dir : list_run_dirs((d.path / "13_mlp_2ranks").string()))
    names.push_back(RunReader(dir).data().name);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"13_mlp_2ranks/rank0", "13_mlp_2ranks/rank1"});
  // A folder merely starting with "rank" keeps its own name.
  CHECK(RunReader((d.path / "rankings").string()).data().name == "rankings");
  CHECK(RunReader((d.path / "13_mlp_2ranks" / "rank1" / "").string()).data().name == "13_mlp_2ranks/rank1");
  // Once run.json is read: it names the rank "rank1" (a rank's log is named after its folder),
  // and the name shown stays "<run>/rank1".
  RunReader r((d.path / "13_gpt_2ranks" / "rank1").string());
  r.poll(1 << 20);
  CHECK(r.data().run_json.value("name", "") == "rank1");
  CHECK(r.data().name == "13_gpt_2ranks/rank1");
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
      // Chapter 08's static scaler never looks for inf, so it never skips a step (an overflow
      // would end a real run); and its scale is one the demo's gradients never overflow.
      for (const auto& p : ls) {
        REQUIRE_FALSE(p.skipped);
        REQUIRE_FALSE(p.found_inf);
      }
    } else {
      CHECK(ls.empty());
    }
    // Memory: steps 0 and 1, then every 50; the optimizer's state appears after the first step.
    REQUIRE(run.memory.count("cpu") == 1);
    const auto& mem = run.memory.at("cpu");
    CHECK(mem.size() == 91);
    CHECK(mem[0].bytes[int(hg::memory::Tag::OptimizerState)] == 0);
    CHECK(mem[1].bytes[int(hg::memory::Tag::OptimizerState)] > 0);
    for (const auto& m : mem) {
      int64_t sum = 0;
      for (int64_t b : m.bytes) sum += b;
      REQUIRE(sum == m.peak);
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

// ---- the validation step: every field class --------------------------------------------
// A line is accepted only when every field has its type and lies in its range
// (viewer/run_log.h, limits). Each case below names the field in the reason it must give.

namespace {

using nlohmann::json;

// A good grad_hist event as JSON, to break one field at a time.
json good_hist() {
  std::vector<int64_t> counts(57, 0);
  counts[-30 + 40] = 3, counts[-20 + 40] = 5, counts[0 + 40] = 7;
  return {{"type", "grad_hist"}, {"step", 50},         {"param", "fc1.weight"}, {"scale", 1024.0},
          {"exp_min", -40},      {"exp_max", 16},      {"counts", counts},     {"below", 1},
          {"above", 2},          {"zeros", 12},        {"fp16_underflow", 4},  {"fp16_subnormal", 5},
          {"fp16_overflow", 2},  {"inf", 0},           {"nan", 1},             {"total", 31},
          {"lost_update_fraction", 0.31}};
}

// "" when the line is accepted, else why it was refused. A refused line must leave the run
// exactly as it was: nothing of it is stored.
std::string why_refused(const std::string& line) {
  RunData d;
  std::string why;
  const bool ok = parse_event_line(line, d, &why);
  if (!ok) {
    CHECK(d.events == 0);
    CHECK(d.grads.empty());
    CHECK(d.params.empty());
    CHECK(d.scalars.empty());
    CHECK(d.loss_scale.empty());
    CHECK(d.notes.empty());
    CHECK(d.memory.empty());
    CHECK(d.fp8.empty());
    CHECK(d.fp8_tensors.empty());
    CHECK(d.max_step == -1);
  }
  return ok ? "" : why;
}
std::string why_refused(const json& j) { return why_refused(j.dump()); }

// The reason must name the field; CHECK_MESSAGE shows which case failed.
void check_refused(const json& j, const std::string& field_and_what) {
  const std::string why = why_refused(j);
  CHECK_MESSAGE(why.find(field_and_what) != std::string::npos,
                j.dump().substr(0, 200) << " -> \"" << why << "\", expected \"" << field_and_what << "\"");
}

json with(json j, const std::string& key, json value) {
  j[key] = std::move(value);
  return j;
}
json with_count(int index, json value) {
  json j = good_hist();
  j["counts"][index] = std::move(value);
  return j;
}

}  // namespace

TEST_CASE("steps: whole numbers 0 .. 2^40, in every event type") {
  const json scalar = {{"type", "scalar"}, {"step", 1}, {"name", "train/loss"}, {"value", 0.5}};
  for (const json& e : {good_hist(), scalar}) {
    CHECK(why_refused(with(e, "step", 0)) == "");
    CHECK(why_refused(with(e, "step", limits::kMaxStep)) == "");
    CHECK(why_refused(with(e, "step", 5.0)) == "");  // a float with no fraction is a whole number
    // 1e17 and 2^53 + 1 once hung the step axis (x + 1 == x for doubles that large).
    check_refused(with(e, "step", 1e17), "step: 1e+17 is outside 0 .. 2^40");
    check_refused(with(e, "step", (int64_t(1) << 53) + 1), "step: 9007199254740993 is outside 0 .. 2^40");
    check_refused(with(e, "step", limits::kMaxStep + 1), "step: 1099511627777 is outside 0 .. 2^40");
    check_refused(with(e, "step", UINT64_MAX), "step: 18446744073709551615 is outside");
    check_refused(with(e, "step", -1), "step: -1 is negative");
    check_refused(with(e, "step", 1.5), "step: 1.5 is not a whole number");
    check_refused(with(e, "step", "5"), "step: \"5\" is not a whole number");
    check_refused(with(e, "step", nullptr), "step: null is not a whole number");
    check_refused(with(e, "step", json::array({1})), "step: an array is not a whole number");
    json no_step = e;
    no_step.erase("step");
    check_refused(no_step, "step: missing");
  }
}

TEST_CASE("counts: whole numbers 0 .. 2^48, and the schema's sums hold") {
  CHECK(why_refused(good_hist()) == "");
  // Negative or absurd counts once reached the heat map as NaN and indexed outside its buffer.
  check_refused(with_count(30, -5), "grad_hist counts[30]: -5 is negative");
  check_refused(with_count(30, 1e30), "grad_hist counts[30]: 1e+30 is outside 0 .. 2^48");
  check_refused(with_count(30, limits::kMaxCount + 1), "counts[30]: 281474976710657 is outside 0 .. 2^48");
  check_refused(with_count(30, 2.5), "counts[30]: 2.5 is not a whole number");
  check_refused(with_count(30, "nan"), "counts[30]: \"nan\" is not a whole number");
  check_refused(with_count(30, nullptr), "counts[30]: null is not a whole number");
  check_refused(with_count(30, json::array({5})), "counts[30]: an array is not a whole number");
  for (const char* key : {"below", "above", "zeros", "fp16_underflow", "fp16_subnormal",
                          "fp16_overflow", "inf", "nan", "total"}) {
    CAPTURE(key);
    check_refused(with(good_hist(), key, -1), std::string(key) + ": -1 is negative");
    check_refused(with(good_hist(), key, 1e300), std::string(key) + ": 1e+300 is outside 0 .. 2^48");
    check_refused(with(good_hist(), key, "3"), std::string(key) + ": \"3\" is not a whole number");
  }
  json no_total = good_hist();
  no_total.erase("total");
  check_refused(no_total, "grad_hist total: missing");
  check_refused(with(good_hist(), "total", 1000),
                "total: 1000, but the bins, below, above, zeros, inf and nan add up to 31");
  check_refused(with(good_hist(), "fp16_underflow", 17), "exceed the 18 finite non-zero values");
  check_refused(with(good_hist(), "counts", json::array({1, 2})), "counts: 2 entries, expected 57");
  check_refused(with(good_hist(), "counts", "many"), "counts: \"many\" is not an array");
  // The largest total there is, with counts that agree: accepted.
  json big = with_count(0, limits::kMaxCount - 31);
  big["total"] = limits::kMaxCount;
  CHECK(why_refused(big) == "");
}

TEST_CASE("exponents: exp_min .. exp_max within the formats' range (2^-149 .. 2^127)") {
  CHECK(min_hist_exponent() == std::ilogb(hg::kFP32.min_subnormal()));  // -149
  CHECK(max_hist_exponent() == std::ilogb(hg::kFP32.max_finite()));     // 127
  json wide = good_hist();
  wide["exp_min"] = -149, wide["exp_max"] = 127;
  wide["counts"] = std::vector<int64_t>(277, 0);
  wide["counts"][0] = 15;  // + below, above, zeros, nan: 31, the total
  CHECK(why_refused(wide) == "");
  // exp_min near INT_MAX once overflowed an int; -3e8 allocated 3e8 heat-map rows.
  json near_max = good_hist();
  near_max["exp_min"] = 2147483600, near_max["exp_max"] = 2147483656;
  check_refused(near_max, "grad_hist exp_min: 2147483600 is outside -149 .. 127");
  json far_below = good_hist();
  far_below["exp_min"] = -3e8, far_below["exp_max"] = -3e8 + 56;
  check_refused(far_below, "exp_min: -300000000.0 is outside -149 .. 127");
  check_refused(with(good_hist(), "exp_min", -150), "exp_min: -150 is outside -149 .. 127");
  check_refused(with(good_hist(), "exp_max", 128), "exp_max: 128 is outside -149 .. 127");
  check_refused(with(good_hist(), "exp_max", -41), "exp_max: -41 is below exp_min -40");
  check_refused(with(good_hist(), "exp_min", -40.5), "exp_min: -40.5 is not a whole number");
}

TEST_CASE("scales: finite and > 0 within the formats' range, a logged loss scale may be inf/nan") {
  CHECK(min_loss_scale() == hg::kFP32.min_subnormal());
  CHECK(max_loss_scale() == hg::kFP32.max_finite());
  CHECK(why_refused(with(good_hist(), "scale", min_loss_scale())) == "");
  CHECK(why_refused(with(good_hist(), "scale", max_loss_scale())) == "");
  for (const json& bad : {json(0.0), json(-1024.0), json(1e39), json(1e-46)})
    check_refused(with(good_hist(), "scale", bad), "grad_hist scale: " + bad.dump() + " is outside");
  for (const json& bad : {json("nan"), json("inf"), json("-inf")})
    check_refused(with(good_hist(), "scale", bad), "grad_hist scale: " + bad.dump() + " is not a finite number");
  check_refused(with(good_hist(), "scale", "big"), "scale: \"big\" is not a number");
  check_refused(with(good_hist(), "scale", nullptr), "scale: null is not a number");

  const json ls = {{"type", "loss_scale"}, {"step", 3}, {"scale", 65536.0}, {"found_inf", false}, {"skipped", false}};
  CHECK(why_refused(ls) == "");
  for (const json& broken : {json("inf"), json("nan"), json(nullptr)})  // a scaler that broke
    CHECK(why_refused(with(ls, "scale", broken)) == "");
  check_refused(with(ls, "scale", 0.0), "loss_scale scale: 0.0 is outside");
  check_refused(with(ls, "scale", -2.0), "loss_scale scale: -2.0 is outside");
  check_refused(with(ls, "scale", "-inf"), "loss_scale scale: -inf is not a loss scale");
  check_refused(with(ls, "found_inf", "yes"), "loss_scale found_inf: \"yes\" is not true or false");
  check_refused(with(ls, "skipped", 1), "loss_scale skipped: 1 is not true or false");
}

TEST_CASE("dtype: the format the values were held in, one of f32, f16, bf16, f64, absent in older logs") {
  auto dtype_of = [](const json& j) {
    RunData d;
    std::string why;
    REQUIRE_MESSAGE(parse_event_line(j.dump(), d, &why), why);
    return d.grads.at("fc1.weight").at(0).dtype;
  };
  CHECK(dtype_of(good_hist()) == GradDtype::Unknown);  // written before the field existed
  CHECK(dtype_of(with(good_hist(), "dtype", "f32")) == GradDtype::F32);
  CHECK(dtype_of(with(good_hist(), "dtype", "bf16")) == GradDtype::BF16);
  CHECK(dtype_of(with(good_hist(), "dtype", "f64")) == GradDtype::F64);
  // An F16 histogram holds nothing below 2^-24 or above 65504: F16 has no such finite values.
  json f16 = with(good_hist(), "dtype", "f16");
  f16["fp16_underflow"] = 0, f16["fp16_overflow"] = 0;
  CHECK(dtype_of(f16) == GradDtype::F16);
  CHECK(std::string(grad_dtype_name(GradDtype::F16)) == "f16");
  check_refused(with(f16, "fp16_underflow", 4), "grad_hist dtype: f16 values hold none below 2^-24 or above 65504, "
                                                "but fp16_underflow is 4 and fp16_overflow 0");
  check_refused(with(f16, "fp16_overflow", 2), "fp16_overflow 2");
  check_refused(with(good_hist(), "dtype", "F16"), "grad_hist dtype: \"F16\" is not one of f32, f16, bf16, f64");
  check_refused(with(good_hist(), "dtype", "fp8"), "grad_hist dtype: \"fp8\" is not one of");
  check_refused(with(good_hist(), "dtype", 16), "grad_hist dtype: 16 is not a string");
}

TEST_CASE("fractions, values, names and texts: type, range and size") {
  check_refused(with(good_hist(), "lost_update_fraction", 1.5), "lost_update_fraction: 1.5 is outside 0 .. 1");
  check_refused(with(good_hist(), "lost_update_fraction", -0.5), "lost_update_fraction: -0.5 is outside");
  check_refused(with(good_hist(), "lost_update_fraction", "nan"), "lost_update_fraction: \"nan\" is not a finite");

  const json scalar = {{"type", "scalar"}, {"step", 1}, {"name", "train/loss"}, {"value", 0.5}};
  for (const json& v : {json(1e308), json(-1e308), json(5e-324), json("nan"), json("-inf"), json(nullptr)})
    CHECK(why_refused(with(scalar, "value", v)) == "");  // any number; NaN and inf are kept, not drawn
  check_refused(with(scalar, "value", "a lot"), "scalar value: \"a lot\" is not a number");
  check_refused(with(scalar, "value", json::object()), "scalar value: an object is not a number");
  check_refused(with(scalar, "epoch", -1), "scalar epoch: -1 is negative");

  check_refused(with(scalar, "name", ""), "scalar name: empty");
  check_refused(with(scalar, "name", 7), "scalar name: 7 is not a string");
  check_refused(with(scalar, "name", "train\nloss"), "scalar name: holds control characters");
  check_refused(with(scalar, "name", std::string(201, 'x')), "scalar name: 201 bytes long, more than 200");
  CHECK(why_refused(with(scalar, "name", std::string(200, 'x'))) == "");
  check_refused(with(good_hist(), "param", std::string(100000, 'p')), "grad_hist param: 100000 bytes long");
  check_refused(with(good_hist(), "param", json::array()), "grad_hist param: an array is not a string");

  const json note = {{"type", "note"}, {"step", 2}, {"text", "switched to BF16"}};
  CHECK(why_refused(with(note, "text", std::string(limits::kMaxNoteBytes, 'n'))) == "");
  check_refused(with(note, "text", std::string(limits::kMaxNoteBytes + 1, 'n')), "note text: 4097 bytes long");
  check_refused(with(note, "text", 3), "note text: 3 is not a string");
  const json end = {{"type", "end"}, {"step", 9}, {"status", "finished"}};
  check_refused(with(end, "status", std::string(300, 's')), "end status: 300 bytes long");
  check_refused(with(end, "type", std::string(300, 't')), "type: 300 bytes long");
  check_refused(with(end, "type", false), "type: false is not a string");
}

TEST_CASE("a run keeps at most kMaxParams parameters and kMaxScalarNames scalar names") {
  RunData d;
  std::string why;
  json h = good_hist();
  for (size_t i = 0; i < limits::kMaxParams; ++i) {
    h["param"] = "p" + std::to_string(i);
    REQUIRE(parse_event_line(h.dump(), d, &why));
  }
  h["param"] = "one_more";
  CHECK_FALSE(parse_event_line(h.dump(), d, &why));
  CHECK(why.find("a run may have 4096 parameters") != std::string::npos);
  h["param"] = "p7";  // a known one is still fine
  h["step"] = 51;
  CHECK(parse_event_line(h.dump(), d, &why));
  CHECK(d.params.size() == limits::kMaxParams);

  json s = {{"type", "scalar"}, {"step", 1}, {"value", 0.5}};
  for (size_t i = 0; i < limits::kMaxScalarNames; ++i) {
    s["name"] = "s" + std::to_string(i);
    REQUIRE(parse_event_line(s.dump(), d, &why));
  }
  s["name"] = "one_more";
  CHECK_FALSE(parse_event_line(s.dump(), d, &why));
  CHECK(why.find("a run may have 1024 scalar names") != std::string::npos);
}

TEST_CASE("whatever a line holds, what is stored satisfies the ranges the panels rely on") {
  // Each good field replaced, one at a time, by values of every kind and magnitude. Lines
  // that pass are stored; everything stored must lie within the limits.
  const std::vector<json> values = {
      json(0), json(1), json(-1), json(57), json(-149), json(127), json(2147483647),
      json(-2147483648LL), json(int64_t(1) << 40), json((int64_t(1) << 40) + 1),
      json(int64_t(1) << 48), json((int64_t(1) << 48) + 1), json(INT64_MAX), json(INT64_MIN),
      json(UINT64_MAX), json(0.5), json(-0.0), json(1e17), json(9007199254740993.0), json(1e30),
      json(-1e30), json(1e308), json(5e-324), json(1e-46), json("nan"), json("inf"), json("-inf"),
      json("12"), json(""), json(nullptr), json(true), json::array(), json::array({1, 2}),
      json::object()};
  json base = good_hist();
  int accepted = 0, refused = 0;
  for (auto field = base.begin(); field != base.end(); ++field) {
    if (field.key() == "type") continue;
    for (const json& v : values) {
      for (int where = 0; where < (field.key() == "counts" ? 2 : 1); ++where) {
        json j = base;
        if (field.key() == "counts") j["counts"][where == 0 ? 0 : 56] = v;
        else j[field.key()] = v;
        RunData d;
        std::string why;
        if (!parse_event_line(j.dump(), d, &why)) {
          ++refused;
          continue;
        }
        ++accepted;
        REQUIRE(d.grads.size() == 1);
        const GradHist& h = d.grads.begin()->second.at(0);
        CAPTURE(j.dump());
        REQUIRE((h.step >= 0 && h.step <= limits::kMaxStep));
        REQUIRE((h.exp_min >= min_hist_exponent() && h.exp_max <= max_hist_exponent()));
        REQUIRE(h.exp_min <= h.exp_max);
        REQUIRE(h.counts.size() == size_t(h.exp_max - h.exp_min + 1));
        for (int64_t c : {h.below, h.above, h.zeros, h.inf, h.nan, h.total, h.fp16_underflow,
                          h.fp16_subnormal, h.fp16_overflow})
          REQUIRE((c >= 0 && c <= limits::kMaxCount));
        for (int64_t c : h.counts) REQUIRE((c >= 0 && c <= limits::kMaxCount));
        REQUIRE(std::isfinite(h.scale));
        REQUIRE((h.scale >= min_loss_scale() && h.scale <= max_loss_scale()));
        REQUIRE((h.lost_update_fraction == -1.0 ||
                 (h.lost_update_fraction >= 0 && h.lost_update_fraction <= 1)));
      }
    }
  }
  CHECK(accepted > 20);  // the good values of each field
  CHECK(refused > 300);
}

// ---- the reader: streaming, caps, run.json, odd files ------------------------------------

TEST_CASE("a line longer than kMaxLineBytes is counted and skipped without being held") {
  TempDir d("longline");
  const std::string good = R"({"type":"scalar","step":0,"name":"train/loss","value":1.0})";
  // A valid note of 3 MiB: a reader that held it would keep it.
  const std::string huge = R"({"type":"note","step":1,"text":")" + std::string(3 << 20, 'x') + "\"}";
  write(d.path / "events.jsonl", good + "\n" + huge + "\n" +
                                     R"({"type":"scalar","step":2,"name":"train/loss","value":0.5})" "\n");
  RunReader r(d.str());
  int64_t most_pending = 0;
  do {
    r.poll(64 << 10);  // as the window reads: a piece at a time
    most_pending = std::max(most_pending, r.data().pending_bytes);
  } while (!r.caught_up());
  CHECK(most_pending <= limits::kMaxLineBytes);
  const RunData& run = r.data();
  CHECK(run.corrupt_lines == 1);
  REQUIRE(run.problems.size() == 1);
  CHECK(run.problems[0] == "line 2: longer than 1048576 bytes, skipped unread");
  CHECK(run.notes.empty());
  REQUIRE(run.scalars.at("train/loss").size() == 2);  // the lines around it are read
  CHECK(run.scalars.at("train/loss")[1].step == 2);
  CHECK(run.lines == 3);
}

TEST_CASE("a file of zero bytes with no newline (a crash after a full disk) is one corrupt line") {
  TempDir d("zeros");
  write(d.path / "events.jsonl", R"({"type":"note","step":0,"text":"ok"})" "\n" +
                                     std::string(2 << 20, '\0'));
  RunReader r(d.str());
  r.poll();
  CHECK(r.caught_up());
  CHECK(r.data().notes.size() == 1);
  CHECK(r.data().corrupt_lines == 1);
  CHECK(r.data().pending_bytes == 0);
}

TEST_CASE("the events a run keeps are capped: reading stops there and says so") {
  TempDir d("cap");
  std::string lines;
  for (int s = 0; s < 2000; ++s)
    lines += R"({"type":"scalar","step":)" + std::to_string(s) + R"(,"name":"train/loss","value":1})" "\n";
  write(d.path / "events.jsonl", lines);
  RunReader r(d.str(), /*memory_cap=*/10000);
  r.poll();
  CHECK(r.caught_up());  // nothing more will be read: the load loop ends
  const RunData& run = r.data();
  CHECK(run.stopped_at_line > 0);
  CHECK(run.held_bytes <= 10000 + 64);
  CHECK(run.scalars.at("train/loss").size() == size_t(run.stopped_at_line - 1));
  const auto problems = run_problems(run);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("stopped reading at line " + std::to_string(run.stopped_at_line)) == 0);
  CHECK(problems[0].find("memory cap of 256 MiB") != std::string::npos);
  CHECK_FALSE(r.poll());  // later polls read nothing more
}

TEST_CASE("run.json that is not an object, not a file, too deep or too big: an error, not a throw") {
  TempDir d("runjson");
  write(d.path / "events.jsonl", R"({"type":"scalar","step":0,"name":"train/loss","value":2.3})" "\n");
  const std::pair<std::string, std::string> cases[] = {
      {"[1,2,3]", "is an array, not a JSON object"},
      {"42", "is a number, not a JSON object"},
      {"\"a run\"", "is a string, not a JSON object"},
      {"null", "is null, not a JSON object"},
      {"{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}", "nests deeper than 32 levels"},
      {"{\"a\":\"" + std::string(2 << 20, 'x') + "\"}", "more than the 1048576 a run.json may have"},
      {"{\"name\": ", "parse error"},
      {"{\"name\":\"bad\\nname\"}", "name: holds control characters (the field is ignored)"},
      {"{\"synthetic\":\"yes\"}", "synthetic: \"yes\" is not true or false"},
  };
  for (const auto& [text, expected] : cases) {
    CAPTURE(expected);
    write(d.path / "run.json", text);
    RunReader r(d.str());
    r.poll();
    CHECK(r.data().run_json_error.find(expected) != std::string::npos);
    CHECK(r.data().scalars.at("train/loss").size() == 1);  // the events are read all the same
    CHECK((r.data().run_json.is_null() || r.data().run_json.is_object()));
    CHECK(r.data().name == d.path.filename().string());
    CHECK(run_problems(r.data()).size() == 1);
  }
  // A run.json with a good name, after all that.
  write(d.path / "run.json", "{\"name\":\"fine\",\"synthetic\":true}");
  RunReader r(d.str());
  r.poll();
  CHECK(r.data().run_json_error.empty());
  CHECK(r.data().name == "fine");
  CHECK(r.data().synthetic);
  CHECK(run_problems(r.data()).empty());
}

TEST_CASE("a run.json that is a pipe does not block the reader") {
  TempDir d("fifo");
  write(d.path / "events.jsonl", R"({"type":"note","step":0,"text":"ok"})" "\n");
  REQUIRE(::mkfifo((d.path / "run.json").c_str(), 0644) == 0);
  // Opening a pipe for reading waits for a writer forever: poll on another thread, and give
  // it five seconds. (A blocked thread is detached; the test fails and the process still ends.)
  auto done = std::make_shared<std::promise<std::string>>();
  std::future<std::string> result = done->get_future();
  std::thread([dir = d.str(), done] {
    RunReader r(dir);
    r.poll();
    done->set_value(r.data().run_json_error + " | notes: " + std::to_string(r.data().notes.size()));
  }).detach();
  REQUIRE(result.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  const std::string got = result.get();
  CHECK(got.find("run.json is not a regular file") != std::string::npos);
  CHECK(got.find("notes: 1") != std::string::npos);
}

TEST_CASE("events.jsonl that is a folder: said, not a crash") {
  TempDir d("evdir");
  write(d.path / "run.json", kRunJson);
  fs::create_directories(d.path / "events.jsonl");
  RunReader r(d.str());
  r.poll();
  CHECK(r.caught_up());
  CHECK(r.data().events_error.find("events.jsonl is not a regular file") != std::string::npos);
  CHECK(run_problems(r.data()) == std::vector<std::string>{r.data().events_error});
}

TEST_CASE("a byte-order mark, CRLF and blank lines: read, and line numbers count every line") {
  TempDir d("bom");
  write(d.path / "events.jsonl",
        "\xEF\xBB\xBF" R"({"type":"note","step":0,"text":"first"})" "\r\n"
        "\r\n"
        "\n"
        R"({"type":"note","step":"x","text":"bad"})" "\r\n");
  RunReader r(d.str());
  r.poll();
  REQUIRE(r.data().notes.size() == 1);
  CHECK(r.data().notes[0].text == "first");
  REQUIRE(r.data().problems.size() == 1);
  CHECK(r.data().problems[0] == "line 4: step: \"x\" is not a whole number");
  CHECK(run_problems(r.data()) ==
        std::vector<std::string>{"1 corrupt line, not drawn (first: line 4: step: \"x\" is not a whole number)"});
}

TEST_CASE("steps logged again (a resumed run): the newer line wins, every series stays sorted") {
  TempDir d("dup");
  std::string text;
  auto add = [&](int step, double loss) {
    json h = good_hist();
    h["step"] = step;
    text += h.dump() + "\n";
    text += json{{"type", "scalar"}, {"step", step}, {"name", "train/loss"}, {"value", loss}}.dump() + "\n";
    text += json{{"type", "loss_scale"}, {"step", step}, {"scale", loss}}.dump() + "\n";
  };
  for (int s : {0, 10, 20, 30}) add(s, 1.0);
  for (int s : {10, 20}) add(s, 2.0);  // resumed from step 10: 20 and 30 are replaced
  add(20, 3.0);                        // the same step again
  RunReader r(d.str());
  write(d.path / "events.jsonl", text);
  r.poll();
  const RunData& run = r.data();
  CHECK(run.corrupt_lines == 0);
  const auto& loss = run.scalars.at("train/loss");
  REQUIRE(loss.size() == 3);
  CHECK(loss[0].step == 0);
  CHECK(loss[1].step == 10);
  CHECK(loss[1].value == 2.0);
  CHECK(loss[2].step == 20);
  CHECK(loss[2].value == 3.0);
  REQUIRE(run.loss_scale.size() == 3);
  CHECK(run.loss_scale[2].scale == 3.0);
  const auto& hs = run.grads.at("fc1.weight");
  REQUIRE(hs.size() == 3);
  CHECK((hs[0].step == 0 && hs[1].step == 10 && hs[2].step == 20));
  CHECK(run.replaced_points == 3 * 4);  // 10, 20, 30 once, then 20 again, in three series
}

TEST_CASE("run_problems: one sentence per problem, the first reason in it") {
  RunData d;
  d.name = "x";
  CHECK(run_problems(d).empty());
  d.corrupt_lines = 3;
  d.problems = {"line 17: grad_hist counts[2]: -5 is negative", "line 20: not valid JSON"};
  d.pending_bytes = 12;
  CHECK(run_problems(d) ==
        std::vector<std::string>{"3 corrupt lines, not drawn (first: line 17: grad_hist counts[2]: -5 is negative)"});
  CHECK(run_problems(d, /*incomplete=*/true).back() == "an incomplete last line (12 bytes) was not read");
  d.run_json_missing = true;
  d.run_json_error = "no run.json in x";  // a run without run.json is normal: not a problem
  CHECK(run_problems(d).size() == 1);
}

// ---- memory events ----------------------------------------------------------------------

namespace {
json good_memory() {
  return {{"type", "memory"},         {"step", 3},          {"device", "cpu"},
          {"parameters", 848},        {"gradients", 848},   {"optimizer_state", 1696},
          {"activations", 4096},      {"temporaries", 512}, {"peak", 8000},
          {"live", 3392}};
}
}  // namespace

TEST_CASE("memory: bytes are whole numbers 0 .. 2^50, the peak is their sum, the device cpu or cuda") {
  RunData d;
  std::string why;
  REQUIRE(parse_event_line(good_memory().dump(), d, &why));
  REQUIRE(d.memory.at("cpu").size() == 1);
  const MemoryPoint& m = d.memory.at("cpu")[0];
  CHECK(m.step == 3);
  CHECK(m.bytes[0] == 848);   // parameters, in the accountant's order
  CHECK(m.bytes[3] == 4096);  // activations
  CHECK(m.peak == 8000);
  CHECK(m.live == 3392);
  CHECK(std::string(MemoryPoint::name(2)) == "optimizer_state");
  CHECK(why_refused(with(good_memory(), "device", "cuda")) == "");

  for (const char* key : {"parameters", "gradients", "optimizer_state", "activations", "temporaries", "peak", "live"}) {
    CAPTURE(key);
    check_refused(with(good_memory(), key, -1), std::string("memory ") + key + ": -1 is negative");
    check_refused(with(good_memory(), key, 1e300), std::string(key) + ": 1e+300 is outside 0 .. 2^50");
    check_refused(with(good_memory(), key, limits::kMaxBytes + 1), std::string(key) + ": 1125899906842625 is outside");
    check_refused(with(good_memory(), key, 2.5), std::string(key) + ": 2.5 is not a whole number");
    check_refused(with(good_memory(), key, "nan"), std::string(key) + ": \"nan\" is not a whole number");
    check_refused(with(good_memory(), key, nullptr), std::string(key) + ": null is not a whole number");
    json missing = good_memory();
    missing.erase(key);
    check_refused(missing, std::string(key) + ": missing");
  }
  check_refused(with(good_memory(), "peak", 7999), "memory peak: 7999, but the five categories add up to 8000");
  check_refused(with(good_memory(), "device", "tpu"), "memory device: \"tpu\" is not cpu or cuda");
  check_refused(with(good_memory(), "device", 1), "memory device: 1 is not a string");
  json no_device = good_memory();
  no_device.erase("device");
  check_refused(no_device, "memory device: missing");
}

TEST_CASE("memory: whatever a line holds, what is stored is within 0 .. 2^50 and sums to the peak") {
  const std::vector<json> values = {json(0), json(1), json(-1), json(int64_t(1) << 50), json((int64_t(1) << 50) + 1),
                                    json(INT64_MAX), json(INT64_MIN), json(UINT64_MAX), json(0.5), json(-0.0),
                                    json(1e17), json(1e308), json(5e-324), json("nan"), json("inf"), json("12"),
                                    json(""), json(nullptr), json(true), json::array(), json::object()};
  int accepted = 0, refused = 0;
  const json base = good_memory();
  for (auto field = base.begin(); field != base.end(); ++field) {
    if (field.key() == "type") continue;
    for (const json& v : values) {
      RunData d;
      std::string why;
      if (!parse_event_line(with(base, field.key(), v).dump(), d, &why)) {
        ++refused;
        continue;
      }
      ++accepted;
      for (const auto& [device, pts] : d.memory) {
        REQUIRE((device == "cpu" || device == "cuda"));
        for (const MemoryPoint& m : pts) {
          int64_t sum = 0;
          for (int64_t b : m.bytes) {
            REQUIRE((b >= 0 && b <= limits::kMaxBytes));
            sum += b;
          }
          REQUIRE(sum == m.peak);
          REQUIRE((m.live >= 0 && m.live <= limits::kMaxBytes));
        }
      }
    }
  }
  CHECK(accepted > 0);
  CHECK(refused > 150);
}

TEST_CASE("memory: a step logged again replaces the points from it on, per device") {
  RunData d;
  std::string why;
  for (int step : {0, 1, 2, 1}) REQUIRE(parse_event_line(with(good_memory(), "step", step).dump(), d, &why));
  REQUIRE(parse_event_line(with(with(good_memory(), "device", "cuda"), "step", 5).dump(), d, &why));
  CHECK(d.memory.at("cpu").size() == 2);  // 0, then the newer 1 (2 dropped)
  CHECK(d.memory.at("cuda").size() == 1);
  CHECK(d.replaced_points == 2);
  CHECK(d.max_step == 5);
}

// ---- fp8_scale events (chapter 14) --------------------------------------------------------

namespace {
json good_fp8() {
  return {{"type", "fp8_scale"}, {"step", 12},        {"tensor", "fc1.dy"},      {"format", "E5M2"},
          {"amax", 0.0123},      {"scale", 4377404.5}, {"scale_max", 4377404.5}, {"history_amax", 0.0131},
          {"underflow", 0.0007}, {"saturated", 0}};
}
}  // namespace

TEST_CASE("fp8_scale: what framework/fp8 writes is read into the tensor's series, nan and inf included") {
  // The writer itself (log_fp8_scales, as chapter 14 calls it), so the reader and the writer
  // cannot drift apart. An amax that overflowed is logged as "inf" or "nan": kept.
  TempDir d("fp8_writer");
  hg::fp8::ScaleRecord x{"fc1.x", hg::fp8::Format::E4M3, 2.0f, 224.0f, 224.0f, 2.0f, {100, 3, 0}};
  hg::fp8::ScaleRecord dy{"fc1.dy", hg::fp8::Format::E5M2, 0.25f, 229376.0f, 229376.0f, 0.5f, {80, 0, 2}};
  hg::fp8::ScaleRecord bad = dy;
  bad.amax = NAN, bad.history_amax = INFINITY;
  {
    hg::io::RunLog log(d.str(), {{"lesson", "14_fp8"}, {"precision", "fp8_delayed"}});
    hg::fp8::log_fp8_scales(log, 0, {x, dy});
    hg::fp8::log_fp8_scales(log, 1, {x, bad});
  }
  RunReader r(d.str());
  r.poll();
  const RunData& run = r.data();
  CHECK(run.corrupt_lines == 0);
  CHECK(run.unknown_types == 0);
  CHECK(run.events == 5);  // four casts and the end
  CHECK(run.fp8_tensors == std::vector<std::string>{"fc1.x", "fc1.dy"});  // order of appearance
  REQUIRE(run.fp8.count("fc1.x") == 1);
  const Fp8Series& sx = run.fp8.at("fc1.x");
  CHECK(sx.format == &hg::kE4M3);
  REQUIRE(sx.points.size() == 2);
  CHECK(sx.points[0].step == 0);
  CHECK(sx.points[0].amax == 2.0);
  CHECK(sx.points[0].scale == 224.0);
  CHECK(sx.points[0].scale_max == 224.0);
  CHECK(sx.points[0].history_amax == 2.0);
  CHECK(sx.points[0].underflow == doctest::Approx(0.03));  // 3 of 100 non-zero values
  CHECK(sx.points[0].saturated == 0);
  const Fp8Series& sdy = run.fp8.at("fc1.dy");
  CHECK(sdy.format == &hg::kE5M2);
  REQUIRE(sdy.points.size() == 2);
  CHECK(sdy.points[0].saturated == 2);
  CHECK(sdy.points[0].scale == 229376.0);
  CHECK(std::isnan(sdy.points[1].amax));
  CHECK(sdy.points[1].history_amax == INFINITY);
  CHECK(run.max_step == 1);
  CHECK(run.held_bytes > 0);
}

TEST_CASE("fp8_scale: each field checked, a bad value refused naming the field") {
  RunData d;
  std::string why;
  REQUIRE(parse_event_line(good_fp8().dump(), d, &why));
  CHECK(d.fp8.at("fc1.dy").points.at(0).history_amax == doctest::Approx(0.0131));

  // Accepted: what a writer may log for a tensor that was all zeros or overflowed, and the
  // scale fp8_max / amax gives in F32 for a subnormal amax (inf) or a huge margin (0).
  for (const std::string key : {"amax", "history_amax", "scale", "scale_max"})
    for (const json& v : {json(0), json("nan"), json("inf"), json(nullptr), json(1e300)}) {
      CAPTURE(key);
      CAPTURE(v.dump());
      json j = with(good_fp8(), key, v);
      if (key == "scale" || key == "scale_max") j["scale"] = j["scale_max"] = v;  // scale_max >= scale
      CHECK(why_refused(j) == "");
    }
  CHECK(why_refused(with(good_fp8(), "format", "E4M3")) == "");
  CHECK(why_refused(with(good_fp8(), "underflow", 1)) == "");

  check_refused(with(good_fp8(), "format", "E3M4"), "fp8_scale format: \"E3M4\" is not E4M3 or E5M2");
  check_refused(with(good_fp8(), "format", "e4m3"), "fp8_scale format: \"e4m3\" is not E4M3 or E5M2");
  check_refused(with(good_fp8(), "format", "FP16"), "fp8_scale format: \"FP16\" is not E4M3 or E5M2");
  check_refused(with(good_fp8(), "format", 8), "fp8_scale format: 8 is not a string");
  for (const char* key : {"amax", "history_amax", "scale", "scale_max"}) {
    CAPTURE(key);
    check_refused(with(good_fp8(), key, -1), std::string("fp8_scale ") + key + ": -1 is negative");
    check_refused(with(good_fp8(), key, -1e-300), std::string(key) + ": -1e-300 is negative");
    check_refused(with(good_fp8(), key, "-inf"), std::string(key) + ": -inf is negative");
    check_refused(with(good_fp8(), key, "big"), std::string(key) + ": \"big\" is not a number");
    check_refused(with(good_fp8(), key, json::array()), std::string(key) + ": an array is not a number");
  }
  check_refused(with(good_fp8(), "scale_max", 2.0), "fp8_scale scale_max: 2 is below scale 4.3774e+06");
  check_refused(with(good_fp8(), "underflow", 1.5), "fp8_scale underflow: 1.5 is outside 0 .. 1");
  check_refused(with(good_fp8(), "underflow", -0.1), "underflow: -0.1 is outside 0 .. 1");
  check_refused(with(good_fp8(), "underflow", "nan"), "underflow: \"nan\" is not a finite number");
  check_refused(with(good_fp8(), "saturated", -1), "fp8_scale saturated: -1 is negative");
  check_refused(with(good_fp8(), "saturated", 2.5), "saturated: 2.5 is not a whole number");
  check_refused(with(good_fp8(), "saturated", (int64_t(1) << 48) + 1), "saturated: 281474976710657 is outside 0 .. 2^48");
  check_refused(with(good_fp8(), "tensor", ""), "fp8_scale tensor: empty");
  check_refused(with(good_fp8(), "tensor", "fc1\tx"), "fp8_scale tensor: holds control characters");
  check_refused(with(good_fp8(), "tensor", std::string(201, 't')), "tensor: 201 bytes long, more than 200");
  check_refused(with(good_fp8(), "step", -3), "step: -3 is negative");
  for (const char* key : {"tensor", "format", "amax", "scale", "scale_max", "history_amax", "underflow", "saturated"}) {
    CAPTURE(key);
    json missing = good_fp8();
    missing.erase(key);
    check_refused(missing, std::string("fp8_scale ") + key + ": missing");
  }
}

TEST_CASE("fp8_scale: whatever a line holds, what is stored lies in the ranges the panel relies on") {
  const std::vector<json> values = {json(0), json(1), json(-1), json(448), json(57344), json(0.5), json(-0.0),
                                    json(1.5), json(INT64_MAX), json(INT64_MIN), json(UINT64_MAX), json(1e308),
                                    json(-1e308), json(5e-324), json("nan"), json("inf"), json("-inf"),
                                    json("E4M3"), json("E5M2"), json(""), json(nullptr), json(true),
                                    json::array(), json::object()};
  int accepted = 0, refused = 0;
  const json base = good_fp8();
  for (auto field = base.begin(); field != base.end(); ++field) {
    if (field.key() == "type") continue;
    for (const json& v : values) {
      RunData d;
      std::string why;
      if (!parse_event_line(with(base, field.key(), v).dump(), d, &why)) {
        ++refused;
        continue;
      }
      ++accepted;
      CAPTURE(with(base, field.key(), v).dump());
      REQUIRE(d.fp8.size() == 1);
      REQUIRE(d.fp8_tensors.size() == 1);
      const Fp8Series& s = d.fp8.begin()->second;
      REQUIRE((s.format == &hg::kE4M3 || s.format == &hg::kE5M2));
      for (const Fp8ScalePoint& p : s.points) {
        REQUIRE((p.step >= 0 && p.step <= limits::kMaxStep));
        for (double m : {p.amax, p.history_amax, p.scale, p.scale_max}) REQUIRE(!(m < 0));  // >= 0, inf or NaN
        REQUIRE((p.underflow >= 0 && p.underflow <= 1));
        REQUIRE((p.saturated >= 0 && p.saturated <= limits::kMaxCount));
        if (std::isfinite(p.scale) && std::isfinite(p.scale_max)) REQUIRE(p.scale_max >= p.scale);
      }
    }
  }
  CHECK(accepted > 20);
  CHECK(refused > 120);
}

TEST_CASE("fp8_scale: steps logged again replace the points from them on, per tensor, and give their memory back") {
  RunData d;
  std::string why;
  for (int step : {0, 1, 2, 3}) REQUIRE(parse_event_line(with(good_fp8(), "step", step).dump(), d, &why));
  const int64_t held_four = d.held_bytes;
  REQUIRE(parse_event_line(with(with(good_fp8(), "tensor", "fc2.dy"), "step", 9).dump(), d, &why));
  // A resumed run logs steps 2 and 3 of fc1.dy again, with other amaxes: the newer lines win.
  REQUIRE(parse_event_line(with(with(good_fp8(), "step", 2), "amax", 0.5).dump(), d, &why));
  const auto& pts = d.fp8.at("fc1.dy").points;
  REQUIRE(pts.size() == 3);  // 0, 1, and the newer 2 (2 and 3 dropped)
  CHECK((pts[0].step == 0 && pts[1].step == 1 && pts[2].step == 2));
  CHECK(pts[2].amax == 0.5);
  CHECK(d.replaced_points == 2);
  CHECK(d.fp8.at("fc2.dy").points.size() == 1);  // another tensor is untouched
  REQUIRE(parse_event_line(with(good_fp8(), "step", 3).dump(), d, &why));
  // Four points of fc1.dy again, plus fc2.dy's point and name (held() counts a name twice, in the
  // list and as a map key, each 64 bytes of node besides): the dropped points gave their bytes back.
  CHECK(d.held_bytes - held_four == int64_t(sizeof(Fp8ScalePoint)) + 2 * int64_t(sizeof(std::string) + 6 + 64));
  CHECK(d.events == 7);
}

TEST_CASE("fp8_scale: a tensor keeps one format, unless every point of it is logged again") {
  RunData d;
  std::string why;
  REQUIRE(parse_event_line(with(good_fp8(), "step", 4).dump(), d, &why));
  REQUIRE(parse_event_line(with(good_fp8(), "step", 5).dump(), d, &why));
  CHECK_FALSE(parse_event_line(with(with(good_fp8(), "step", 6), "format", "E4M3").dump(), d, &why));
  CHECK(why == "fp8_scale format: E4M3, but fc1.dy was cast to E5M2 before step 6");
  CHECK_FALSE(parse_event_line(with(with(good_fp8(), "step", 5), "format", "E4M3").dump(), d, &why));
  CHECK(d.fp8.at("fc1.dy").points.size() == 2);  // the refused lines changed nothing
  // Logged again from step 4, its first: every point is replaced, the format with them.
  REQUIRE(parse_event_line(with(with(good_fp8(), "step", 4), "format", "E4M3").dump(), d, &why));
  CHECK(d.fp8.at("fc1.dy").format == &hg::kE4M3);
  CHECK(d.fp8.at("fc1.dy").points.size() == 1);
}

TEST_CASE("fp8_scale: a run keeps at most kMaxFp8Tensors tensors") {
  RunData d;
  std::string why;
  json e = good_fp8();
  for (size_t i = 0; i < limits::kMaxFp8Tensors; ++i) {
    e["tensor"] = "l" + std::to_string(i) + ".x";
    REQUIRE(parse_event_line(e.dump(), d, &why));
  }
  e["tensor"] = "one_more.x";
  CHECK_FALSE(parse_event_line(e.dump(), d, &why));
  CHECK(why == "fp8_scale tensor: a run may have 4096 FP8 tensors; \"one_more.x\" is one more");
  e["tensor"] = "l7.x";  // a known one is still fine
  e["step"] = 13;
  CHECK(parse_event_line(e.dump(), d, &why));
  CHECK(d.fp8_tensors.size() == limits::kMaxFp8Tensors);
  CHECK(d.fp8.size() == limits::kMaxFp8Tensors);
}

TEST_CASE("fp8_scale: the fp8_delayed demo run casts with delayed scaling's own scales") {
  // Replays each tensor's logged amaxes through framework/fp8's DelayedScaling (history 16,
  // margin 0, as the demo's run.json says): every logged scale must be the one the recipe gives
  // before that step's amax, every history_amax the one after, and a step must count saturated
  // values exactly when its amax · scale passes the format's max in F32.
  TempDir d("fp8_demo");
  DemoOptions opt;
  opt.steps = 300;
  const auto dirs = make_demo_runs(d.str(), opt, {"fp8_delayed"});
  REQUIRE(dirs.size() == 1);
  RunReader r(dirs[0]);
  r.poll();
  const RunData& run = r.data();
  CHECK(run.synthetic);
  CHECK(run.corrupt_lines == 0);
  CHECK(run.grads.empty());   // chapter 14 logs no histograms
  CHECK(run.memory.empty());  // ... and no memory events
  CHECK(run.scalars.at("train/loss").size() == 300);
  CHECK(run.run_json["args"]["history"] == 16);
  REQUIRE(run.fp8_tensors == std::vector<std::string>{"fc1.x", "fc1.w", "fc1.dy", "fc2.x", "fc2.w", "fc2.dy",
                                                      "fc3.x", "fc3.w", "fc3.dy"});
  int64_t saturating_steps = 0;
  for (const auto& [name, s] : run.fp8) {
    CAPTURE(name);
    const bool grad = name.substr(name.size() - 3) == ".dy";
    CHECK(s.format == (grad ? &hg::kE5M2 : &hg::kE4M3));  // HYBRID
    REQUIRE(s.points.size() == 300);
    const hg::fp8::Format f = grad ? hg::fp8::Format::E5M2 : hg::fp8::Format::E4M3;
    hg::fp8::DelayedScaling rule(f, 16, 0);
    for (const Fp8ScalePoint& p : s.points) {
      CAPTURE(p.step);
      REQUIRE(p.scale == rule.scale());
      rule.update(float(p.amax));
      REQUIRE(p.history_amax == rule.history_amax());
      REQUIRE(p.scale_max == p.scale);
      const bool above = float(p.amax) * float(p.scale) > float(hg::fp8::max_value(f));
      REQUIRE((p.saturated > 0) == above);
      REQUIRE((p.underflow >= 0 && p.underflow <= 1));
      // The delay: a cast saturates only when its amax is a new maximum of the window (the
      // scale came from the old one), so after it the history's max is this amax.
      if (p.saturated > 0) REQUIRE(p.history_amax == float(p.amax));
      saturating_steps += p.saturated > 0;
    }
    CHECK(s.points[0].scale == 1.0f);  // an empty history: the first step is cast with 1
  }
  CHECK(saturating_steps > 0);  // the delay shows: some steps saturate
}

TEST_CASE("command events of a live run: applied, refused with a reason, or a line that was no command") {
  RunData d;
  std::string why;
  REQUIRE(parse_event_line(R"({"type":"command","step":7,"source":"script","applied":true,)"
                           R"("command":{"cmd":"set","key":"loss_scale","log2":-4},"effect":{"before_log2":16}})", d, &why));
  REQUIRE(parse_event_line(R"({"type":"command","step":9,"source":"control.jsonl line 2","applied":false,)"
                           R"("text":"garbage","reason":"not JSON: garbage"})", d, &why));
  REQUIRE(d.commands.size() == 2);
  CHECK(d.commands[0].applied);
  CHECK(d.commands[0].command["log2"] == -4);
  CHECK(d.commands[1].reason == "not JSON: garbage");
  CHECK(d.commands[1].text == "garbage");
  CHECK(d.unknown_types == 0);
  // Each missing or mistyped field: refused with its name, nothing stored.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"type":"command","step":1,"source":"script","command":{"cmd":"stop"}})", "applied"},
      {R"({"type":"command","step":1,"source":"script","applied":"yes","command":{"cmd":"stop"}})", "applied"},
      {R"({"type":"command","step":1,"applied":true,"command":{"cmd":"stop"}})", "source"},
      {R"({"type":"command","step":1,"source":"script","applied":true,"command":[1]})", "command"},
      {R"({"type":"command","step":1,"source":"script","applied":true})", "text"},
      {R"({"type":"command","step":1,"source":"script","applied":false,"command":{"cmd":"stop"}})", "reason"},
  };
  for (const auto& [line, field] : bad) {
    INFO(line);
    CHECK_FALSE(parse_event_line(line, d, &why));
    CHECK(why.find(field) != std::string::npos);
  }
  CHECK(d.commands.size() == 2);
}
