#include "framework/train/run_folder.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
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

std::string run_folder(const std::string& name) { return std::string(kRunsRoot) + "/" + name; }

std::string folder_write_problem(const std::string& dir) {
  const std::string probe = dir + "/.halfgrad-write-test." + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return "cannot write into " + dir + ": " + std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

std::string check_run_folders(const std::vector<std::string>& names, bool overwrite, bool resume) {
  for (const std::string& name : names) {
    const std::string why = run_name_problem(name);
    if (!why.empty()) return "--run-name: " + why;
    const std::string dir = run_folder(name);
    std::error_code ec;
    if (fs::exists(dir, ec) && !overwrite && !resume)
      return dir + " already exists (an earlier run's log): pass --overwrite to replace it, or "
                   "choose another --run-name";
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
  const std::string dir = run_folder(name);
  std::error_code ec;
  if (overwrite) {
    fs::remove_all(dir, ec);  // a link is removed, not followed
    if (ec) throw std::runtime_error("--overwrite: cannot remove " + dir + ": " + ec.message());
  }
  fs::create_directories(kRunsRoot, ec);
  if (ec) throw std::runtime_error("cannot create " + std::string(kRunsRoot) + "/: " + ec.message());
  // mkdir is atomic: of two programs claiming the same name, exactly one creates it.
  if (::mkdir(dir.c_str(), 0777) != 0) {
    const int err = errno;
    if (err != EEXIST) throw std::runtime_error("cannot create " + dir + ": " + std::strerror(err));
    if (!resume)
      throw std::runtime_error(dir + " appeared after this program started (another run with the "
                                     "same --run-name?); not writing into it");
  }
  return dir;
}

}  // namespace hg::train
