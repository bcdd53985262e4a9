// The runs a viewer follows under one memory budget (viewer/run_set.h): the runs shown are read
// first and may fill the budget, the run shown least recently is unloaded to make room and read
// again, identically, when shown again; a shown run that does not fit stops at its share, says
// so, and reads on when there is room; the window's background reading never goes beyond the
// budget; a folder reached twice is one run; each run's file stem is its own.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "viewer/run_set.h"

namespace fs = std::filesystem;
using namespace hg::viewer;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() / ("hg_viewer_run_set_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// A run of `steps` grad_hist lines (57 bins each: about 600 bytes held per line).
void write_run(const fs::path& dir, int steps) {
  fs::create_directories(dir);
  std::ofstream out(dir / "events.jsonl");
  for (int s = 0; s < steps; ++s) {
    out << R"({"type":"grad_hist","step":)" << s << R"(,"param":"w","exp_min":-40,"exp_max":16,"counts":[)";
    for (int b = 0; b < 57; ++b) out << (b ? "," : "") << (b == 20 ? 1 : 0);
    out << R"(],"total":1})" << "\n";
  }
}

// runs/r0 .. r<n-1>, each of `steps` lines; the RunSet that found them, with `budget`.
RunSet make_runs(const TempDir& d, int n, int steps, int64_t budget) {
  for (int i = 0; i < n; ++i) write_run(d.path / ("r" + std::to_string(i)), steps);
  RunSet runs(budget);
  REQUIRE(runs.scan({d.path.string()}) == size_t(n));
  return runs;
}

int64_t sum_held(const RunSet& runs) {
  int64_t sum = 0;
  for (const RunSlot& s : runs) sum += s.data().held_bytes;
  return sum;
}

size_t points(const RunSlot& s) {
  auto it = s.data().grads.find("w");
  return it == s.data().grads.end() ? 0 : it->second.size();
}

}  // namespace

TEST_CASE("the runs shown are read, and the run shown least recently is unloaded to make room") {
  TempDir d("lru");
  // One run holds about 60 kB; the budget holds three.
  RunSet probe = make_runs(d, 6, 100, INT64_MAX);
  probe.poll({0}, INFINITY, false);
  const int64_t one = probe[0].data().held_bytes;
  REQUIRE(one > 50000);
  RunSet runs(3 * one + one / 2);
  runs.scan({d.path.string()});

  for (int i : {0, 1, 2}) runs.poll({i}, INFINITY, /*background=*/false);
  CHECK(runs.read_count() == 3);
  CHECK(runs.held() == 3 * one);
  CHECK(runs.held_back() == 0);
  runs.poll({3}, INFINITY, false);  // no room for a fourth: run 0, shown first, goes
  CHECK(runs.held() == sum_held(runs));
  CHECK(runs.held() <= runs.budget());
  CHECK(runs[0].unloaded);
  CHECK_FALSE(runs[0].reader->polled());
  CHECK(runs[0].data().held_bytes == 0);
  CHECK(points(runs[0]) == 0);
  for (int i : {1, 2, 3}) CHECK(points(runs[i]) == 100);
  CHECK(runs.held_back() == 1);
  // Shown again, run 0 is read again from the start, the same as before; now run 1 goes.
  runs.poll({0}, INFINITY, false);
  CHECK(points(runs[0]) == 100);
  CHECK(runs[0].data().held_bytes == one);
  CHECK_FALSE(runs[0].unloaded);
  CHECK(runs[1].unloaded);
  CHECK(runs.held() == sum_held(runs));
  // Two runs shown together keep each other: the others make room.
  runs.poll({4, 5}, INFINITY, false);
  CHECK(points(runs[4]) == 100);
  CHECK(points(runs[5]) == 100);
  CHECK(runs.held() <= runs.budget());
  CHECK(runs.read_count() == 3);
}

TEST_CASE("a shown run that does not fit stops at its share, says so, and reads on when there is room") {
  TempDir d("share");
  RunSet probe = make_runs(d, 2, 100, INT64_MAX);
  probe.poll({0}, INFINITY, false);
  const int64_t one = probe[0].data().held_bytes;
  RunSet runs(one + one / 2);
  runs.scan({d.path.string()});
  runs.poll({0, 1}, INFINITY, false);
  CHECK(points(runs[0]) == 100);
  const RunData& second = runs[1].data();
  CHECK(second.stopped_at_line > 0);
  CHECK(second.stopped_at_share);
  CHECK(second.stopped_share == runs.budget() - one);
  CHECK(points(runs[1]) == size_t(second.stopped_at_line - 1));
  CHECK(runs.held() <= runs.budget() + 700);  // a line past the share at most
  CHECK(runs.held_back() == 1);
  const auto problems = run_problems(second);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("stopped reading at line " + std::to_string(second.stopped_at_line)) == 0);
  CHECK(problems[0].find("memory budget") != std::string::npos);
  CHECK(problems[0].find("--memory-budget") != std::string::npos);
  // Shown alone it has the whole budget: it reads on from where it stopped, to the end, and
  // run 0 is unloaded.
  runs.poll({1}, INFINITY, false);
  CHECK(second.stopped_at_line == 0);
  CHECK(points(runs[1]) == 100);
  CHECK(second.held_bytes == one);
  CHECK(second.corrupt_lines == 0);
  CHECK(runs[0].unloaded);
  CHECK(run_problems(second).empty());
}

TEST_CASE("the window reads the other runs in turn while the budget has room, never beyond it") {
  TempDir d("background");
  RunSet probe = make_runs(d, 10, 100, INT64_MAX);
  probe.poll({0}, INFINITY, false);
  const int64_t one = probe[0].data().held_bytes;
  RunSet runs(3 * one + 100);
  runs.scan({d.path.string()});
  runs.poll({}, INFINITY, /*background=*/true);
  CHECK(runs.read_count() == 3);  // a fourth would not fit (its file is larger than the room): not started
  CHECK(runs.held() <= runs.budget());
  CHECK(runs.held_back() == 7);
  for (const RunSlot& s : runs) CHECK_FALSE(s.unloaded);
  // Showing run 9 makes room for it; the background does not read the run it unloaded again.
  runs.poll({9}, INFINITY, true);
  CHECK(points(runs[9]) == 100);
  CHECK(runs.held() <= runs.budget());
  size_t unloaded = 0;
  for (const RunSlot& s : runs) unloaded += s.unloaded;
  CHECK(unloaded == 1);
  CHECK(runs.read_count() == 3);
}

TEST_CASE("a poll with no time left stops in the middle of a run, and the next ones go on from there") {
  TempDir d("busy");
  write_run(d.path / "big", 2000);  // about 500 kB: two pieces of 256 KiB
  RunSet runs;
  runs.scan({d.path.string()});
  runs.poll({0}, 0.0, true);
  CHECK(runs.busy());
  CHECK_FALSE(runs[0].reader->caught_up());
  for (int polls = 0; runs.busy() && polls < 10; ++polls) runs.poll({0}, 0.0, true);
  CHECK_FALSE(runs.busy());
  CHECK(runs[0].reader->caught_up());
  CHECK(points(runs[0]) == 2000);
  CHECK(runs[0].data().corrupt_lines == 0);
}

TEST_CASE("a folder reached twice is one run, and each run's file stem is its own") {
  TempDir d("stems");
  const std::string line = R"({"type":"scalar","step":0,"name":"train/loss","value":1})" "\n";
  for (const char* run : {"a/rank0", "a/rank1", "a/rank10", "a/rank2", "b/rank0", "plain"}) {
    fs::create_directories(d.path / run);
    std::ofstream(d.path / run / "events.jsonl") << line;
  }
  RunSet runs;
  const std::string root = d.path.string();
  CHECK(runs.scan({root, root + "/a/rank0/", root + "/./b/../a/rank1", root + "/"}) == 6);
  std::vector<std::string> stems;  // in the order found: a job's ranks by number
  for (const RunSlot& s : runs) stems.push_back(s.file_stem);
  CHECK(stems == std::vector<std::string>{"a_rank0", "a_rank1", "a_rank2", "a_rank10", "b_rank0", "plain"});
  // A rank folder given itself: named after its job too.
  RunSet one;
  CHECK(one.scan({root + "/b/rank0"}) == 1);
  CHECK(one[0].file_stem == "b_rank0");
  // A job's folder given itself: its ranks, still named after the job.
  RunSet job;
  CHECK(job.scan({root + "/a"}) == 4);
  CHECK(job[0].file_stem == "a_rank0");
  CHECK(job[3].file_stem == "a_rank10");
  CHECK(runs.read_count() == 0);  // scanning reads nothing
}
