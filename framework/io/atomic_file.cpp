#include "framework/io/atomic_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace hg::io {

std::string atomic_temp_path(const std::string& path) {
  return fmt::format("{}.tmp.{}", path, long(::getpid()));
}

static std::string parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

static std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "<digits>" as written by atomic_temp_path (no sign, no leading zero), else -1.
static long pid_of_suffix(const std::string& s) {
  if (s.empty() || s.size() > 9 || s[0] == '0' || s.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stol(s);
}

int remove_stale_temporaries(const std::string& path) {
  const std::string dir = parent_dir(path), prefix = base_name(path) + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;  // the save itself will report a folder it cannot use
  int removed = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const long pid = pid_of_suffix(name.substr(prefix.size()));
    if (pid <= 0 || pid == long(::getpid())) continue;
    // kill(pid, 0) sends nothing; it only asks whether the process exists. EPERM means it
    // exists but belongs to someone else: alive, so its file is kept.
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string file = dir + "/" + name;
    struct stat st;
    if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;  // never a folder or a link
    if (::unlink(file.c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

void write_file_atomic(const std::string& path, const void* data, size_t size) {
  // First, so that the space a killed writer left behind is free for this write.
  remove_stale_temporaries(path);
  const std::string tmp = atomic_temp_path(path);
  auto fail = [&](const char* step, int err) {
    ::unlink(tmp.c_str());  // never leave a half-written temporary behind
    return std::runtime_error(fmt::format("cannot write {}: {} failed: {} (the previous file, if any, "
                                          "is unchanged)", path, step, std::strerror(err)));
  };

  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    // open failed: nothing was created, but a stale file of ours may exist; the message matters.
    throw std::runtime_error(fmt::format("cannot write {}: creating {} failed: {} (the previous "
                                         "file, if any, is unchanged)", path, tmp, std::strerror(err)));
  }
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      throw fail("write", err);
    }
    p += n;
    left -= size_t(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    throw fail("fsync", err);
  }
  if (::close(fd) != 0) throw fail("close", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw fail("rename", errno);

  // The new name must survive a crash too: fsync the folder that holds it. A folder that
  // can be written but not opened (no read permission) leaves nothing to fsync through.
  const int dfd = ::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  // Some file systems refuse fsync on a folder (EINVAL, ENOTSUP): nothing is wrong then.
  if (::fsync(dfd) != 0 && errno != EINVAL && errno != ENOTSUP) {
    const int err = errno;
    ::close(dfd);
    throw std::runtime_error(fmt::format("{} was written, but fsync of its folder failed: {} (the new file "
                                         "is in place; a crash now could still undo the rename)",
                                         path, std::strerror(err)));
  }
  ::close(dfd);  // a read-only descriptor: its close cannot lose data
}

void make_dirs(const std::string& dir) {
  if (dir.empty()) return;
  std::string sofar;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    sofar = dir.substr(0, pos);
    if (sofar.empty()) continue;
    if (::mkdir(sofar.c_str(), 0755) != 0 && errno != EEXIST)
      throw std::runtime_error(fmt::format("cannot create folder {}: {}", sofar, std::strerror(errno)));
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw std::runtime_error(fmt::format("cannot create folder {}: a file is in the way", dir));
}

}  // namespace hg::io
