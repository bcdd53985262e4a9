#include "framework/io/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
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

void write_file_atomic(const std::string& path, const void* data, size_t size) {
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

  // The new name must survive a crash too: fsync the folder that holds it.
  const int dfd = ::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some file systems refuse fsync on a folder
    ::close(dfd);
  }
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
