#include "framework/train/run_folder.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace hg::train {

namespace {

bool safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// The deepest folder of `path` (itself included) that exists: where a new file or folder
// on the way to `path` would be created.
fs::path nearest_existing(fs::path path) {
  std::error_code ec;
  while (!path.empty() && !fs::exists(path, ec)) path = path.parent_path();
  return path.empty() ? fs::path(".") : path;
}

constexpr const char* kOverwriteAndResume =
    "--overwrite and --resume together: --overwrite would delete the run log that --resume continues; give one of them";

std::string lock_path(const std::string& dir) { return dir + "/" + kRunLockFile; }

// The pid written in a lock file, 0 when there is none (not written yet, or unreadable).
long pid_in(int fd) {
  char buf[24] = {};
  if (::pread(fd, buf, sizeof buf - 1, 0) <= 0) return 0;
  const long pid = std::strtol(buf, nullptr, 10);
  return pid > 0 ? pid : 0;
}

std::string live_run_message(const std::string& dir, long pid) {
  // kill(pid, 0) sends nothing; it asks whether the process exists. A pid that is gone is an
  // old holder's: the live holder has not written its own yet.
  if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) pid = 0;
  return dir + " is being written by a live run (" +
         (pid > 0 ? "process " + std::to_string(pid) : std::string("another program")) +
         "); not taking it over: wait for that run to end, or choose another --run-name";
}

// Whether another program holds dir's lock now: "" or live_run_message(). A probe takes a
// shared lock for an instant (probes do not block each other) and gives it back. A lock
// this program holds already (claimed through another descriptor) is no bar.
std::string held_by_live_run(const std::string& dir) {
  const int fd = ::open(lock_path(dir).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";  // no lock file: no run has claimed the folder since runs were locked
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
  const long pid = held ? pid_in(fd) : 0;
  ::close(fd);  // gives back the probe's lock
  return !held || pid == long(::getpid()) ? "" : live_run_message(dir, pid);
}

// runs/<X>/... for an X that is not one of `names`: "" or why the checkpoint may not go there.
std::string checkpoint_folder_problem(const std::string& checkpoint, const std::vector<std::string>& names) {
  std::error_code ec;
  const fs::path runs = fs::weakly_canonical(fs::absolute(kRunsRoot, ec), ec);
  const fs::path file = fs::weakly_canonical(fs::absolute(checkpoint, ec), ec);
  const fs::path rel = file.lexically_relative(runs);
  if (rel.empty() || *rel.begin() == ".." || std::next(rel.begin()) == rel.end())
    return "";  // outside runs/, or a file in runs/ itself, in no run's folder
  const std::string folder = rel.begin()->string();
  for (const std::string& name : names)
    if (folder == name)
      return file.filename() == kRunLockFile ? "--checkpoint " + checkpoint + ": is the run folder's lock file" : "";
  return "--checkpoint " + checkpoint + ": inside " + run_path(folder) +
         ", the folder of another run (a run folder holds one run's files)";
}

}  // namespace

std::string run_name_problem(const std::string& name) {
  if (name.empty()) return "the run name is empty";
  if (name.size() > kMaxRunName)
    return "'" + name.substr(0, 20) + "...' has " + std::to_string(name.size()) + " characters; at most " +
           std::to_string(kMaxRunName);
  for (char c : name)
    if (!safe_char(c))
      return "'" + name + "' is not a folder name: use letters, digits, '.', '_' and '-' only";
  if (name[0] == '.' || name[0] == '-')
    return "'" + name + "' must start with a letter, a digit or '_'";
  return "";
}

std::string run_path(const std::string& name) { return std::string(kRunsRoot) + "/" + name; }

std::string folder_write_problem(const std::string& dir) {
  const std::string probe = dir + "/.halfgrad-write-test." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return "cannot write into " + dir + ": " + std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

std::string check_run_folders(const std::vector<std::string>& names, bool overwrite, bool resume,
                              const std::string& checkpoint) {
  if (overwrite && resume) return kOverwriteAndResume;
  for (const std::string& name : names) {
    const std::string why = run_name_problem(name);
    if (!why.empty()) return "--run-name: " + why;
    const std::string dir = run_path(name);
    std::error_code ec;
    if (!fs::exists(dir, ec)) continue;
    if (!overwrite && !resume)
      return dir + " already exists (an earlier run's log): pass --overwrite to replace it, or "
                   "choose another --run-name";
    const std::string live = held_by_live_run(dir);
    if (!live.empty()) return live;
  }
  if (!checkpoint.empty()) {
    const std::string why = checkpoint_folder_problem(checkpoint, names);
    if (!why.empty()) return why;
  }
  const fs::path where = nearest_existing(kRunsRoot);
  std::error_code ec;
  if (!fs::is_directory(where, ec)) return "cannot create " + std::string(kRunsRoot) + "/: " + where.string() + " is not a folder";
  const std::string why = folder_write_problem(where.string());
  return why.empty() ? "" : why + " (the run logs go to " + kRunsRoot + "/)";
}

std::string claim_run_folder(const std::string& name, bool overwrite, bool resume) {
  const std::string why = run_name_problem(name);
  if (!why.empty()) throw std::runtime_error("--run-name: " + why);
  if (overwrite && resume) throw std::runtime_error(kOverwriteAndResume);
  const std::string dir = run_path(name);
  std::error_code ec;
  fs::create_directories(kRunsRoot, ec);
  if (ec) throw std::runtime_error("cannot create " + std::string(kRunsRoot) + "/: " + ec.message());
  // --overwrite of something that is not a plain folder (a link, a file): emptying it would
  // reach through the link, so it is removed (a link, not what it points to) and made anew.
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (overwrite && fs::exists(st) && !fs::is_directory(st)) {
    const std::string live = held_by_live_run(dir);
    if (!live.empty()) throw std::runtime_error(live);
    fs::remove(dir, ec);
    if (ec) throw std::runtime_error("--overwrite: cannot remove " + dir + ": " + ec.message());
  }
  // mkdir is atomic: of two programs claiming the same name, exactly one creates it.
  bool existed = false;
  if (::mkdir(dir.c_str(), 0777) != 0) {
    const int err = errno;
    if (err != EEXIST) throw std::runtime_error("cannot create " + dir + ": " + std::strerror(err));
    if (!overwrite && !resume)
      throw std::runtime_error(dir + " appeared after this program started (another run with the "
                                     "same --run-name?); not writing into it");
    existed = true;
  }
  // The lock, before anything in the folder changes, without waiting: a live run holds it
  // for as long as it trains. Another program's probe (held_by_live_run) holds it for an
  // instant only, so a refusal is tried again for up to 0.1 s first.
  const int fd = ::open(lock_path(dir).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + lock_path(dir) + ": " + std::strerror(errno));
  int err = 0;
  for (int attempt = 0; attempt < 20; ++attempt) {
    err = ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno;
    if (err != EWOULDBLOCK || pid_in(fd) == long(::getpid())) break;
    ::usleep(5000);
  }
  if (err == 0) {
    // Who holds it, for the message of a program that finds it taken. Best effort: the lock
    // works without it, and that message then says "another program". The descriptor is
    // never closed: the lock lasts as long as this program, and the kernel releases it when
    // the program ends.
    const std::string pid = std::to_string(long(::getpid())) + "\n";
    if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {}
  } else {
    const long holder = pid_in(fd);
    ::close(fd);
    if (err != EWOULDBLOCK) throw std::runtime_error("cannot lock " + lock_path(dir) + ": " + std::strerror(err));
    if (holder != long(::getpid())) throw std::runtime_error(live_run_message(dir, holder));
    // else this program claimed it before and holds the lock through that descriptor
  }
  if (existed && overwrite) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
      if (e.path().filename() == kRunLockFile) continue;
      fs::remove_all(e.path(), ec);  // a link is removed, not followed
      if (ec) throw std::runtime_error("--overwrite: cannot remove " + e.path().string() + ": " + ec.message());
    }
    if (ec) throw std::runtime_error("--overwrite: cannot read " + dir + ": " + ec.message());
  }
  return dir;
}

}  // namespace hg::train
