// The Lab panel's process side (viewer/lab.h), without a display: a live run started in a
// folder of its own next to one that exists, a command appended whole, and a run killed from
// outside seen as ended at once, with how it ended (the panel says so; nothing waits on it).
#include <doctest/doctest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "viewer/lab.h"

namespace fs = std::filesystem;

namespace {

// The test runs in a folder of its own (the lab writes runs/ in the current folder), removed
// however it ends.
struct InTempDir {
  fs::path old = fs::current_path(), path;
  InTempDir() {
    std::string tmpl = (fs::temp_directory_path() / "hg_lab_XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
    fs::current_path(path);
  }
  ~InTempDir() {
    std::error_code ec;
    fs::current_path(old, ec);
    fs::remove_all(path, ec);
  }
};

std::string read_file(const std::string& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("lab: a run in a new folder, a command appended whole, a kill seen at once") {
  InTempDir tmp;
  fs::create_directories("runs/lab_1");  // somebody's: never taken over
  hg::viewer::LabRun lab;
  CHECK(lab.send({{"cmd", "pause"}}) == "no lab run");
  REQUIRE(lab.start(HG_LIVE_EXE, {"--paused", "--limit-train", "256", "--limit-test", "64", "--threads", "1"}) == "");
  CHECK(lab.dir() == "runs/lab_2");
  CHECK(lab.start(HG_LIVE_EXE, {}).find("a lab run is going") == 0);
  for (int i = 0; i < 300 && !fs::exists("runs/lab_2/control.jsonl"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(lab.running());
  CHECK(lab.send({{"cmd", "step"}, {"n", 2}}) == "");
  CHECK(read_file("runs/lab_2/control.jsonl") == "{\"cmd\":\"step\",\"n\":2}\n");
  ::kill(lab.pid(), SIGKILL);
  CHECK(lab.wait(10));
  CHECK_FALSE(lab.running());
  CHECK(lab.ended() == "killed by signal 9");
  CHECK(fs::is_empty("runs/lab_1"));
  CHECK(hg::viewer::describe_exit(3 << 8) == "exit code 3 (the training diverged)");
}
