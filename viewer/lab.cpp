#include "viewer/lab.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

extern char** environ;

namespace hg::viewer {

namespace fs = std::filesystem;

std::string live_program_beside_this_one() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path live = self.parent_path() / "halfgrad-live";
  return fs::exists(live, ec) ? live.string() : "";
}

std::string describe_exit(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  if (!WIFEXITED(status)) return "ended (status " + std::to_string(status) + ")";
  const int code = WEXITSTATUS(status);
  const char* what = code == 0 ? "finished" : code == 2 ? "refused its command line"
                   : code == 3 ? "the training diverged" : "failed";
  return "exit code " + std::to_string(code) + " (" + what + ")";
}

LabRun::~LabRun() = default;

std::string LabRun::start(const std::string& exe, const std::vector<std::string>& args, const std::string& runs_root) {
  if (started() && running()) return "a lab run is going: " + dir_;
  if (exe.empty()) return "halfgrad-live was not found beside the viewer (build it: ./lab build)";
  std::error_code ec;
  for (int n = 1;; ++n) {  // a folder of its own: never one that exists
    name_ = "lab_" + std::to_string(n);
    if (!fs::exists(fs::path(runs_root) / name_, ec)) break;
  }
  dir_ = (fs::path(runs_root) / name_).string();
  std::vector<std::string> all = {exe};
  all.insert(all.end(), args.begin(), args.end());
  all.insert(all.end(), {"--run-name", name_, "--exit-with-parent"});
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // Its lines go to the viewer's stderr, so the terminal shows them; stdout stays the viewer's.
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  const int rc = ::posix_spawn(&pid_, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = -1;
    return "cannot start " + exe + ": " + std::strerror(rc);
  }
  reaped_ = false;
  ended_.clear();
  return "";
}

std::string LabRun::send(const nlohmann::json& command) const {
  if (!started()) return "no lab run";
  const std::string path = dir_ + "/control.jsonl";
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);  // never created here:
  if (fd < 0) return path + ": " + std::strerror(errno);                  // the run makes it
  const std::string line = command.dump() + "\n";
  const ssize_t put = ::write(fd, line.data(), line.size());  // one write: a whole line or none
  ::close(fd);
  if (put != ssize_t(line.size())) return path + ": the command could not be written";
  return "";
}

bool LabRun::running() {
  if (!started() || reaped_) return false;
  int status = 0;
  const pid_t got = ::waitpid(pid_, &status, WNOHANG);
  if (got == 0) return true;
  reaped_ = true;
  ended_ = got == pid_ ? describe_exit(status) : std::string("ended (") + std::strerror(errno) + ")";
  return false;
}

bool LabRun::wait(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (running()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace hg::viewer
