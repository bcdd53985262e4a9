#pragma once
// Writing a file so that a reader (or a crash) never sees half of it.
//
//   0. remove stale temporaries of the same path (below)
//   1. write everything to a temporary file in the SAME folder (<path>.tmp.<pid>)
//   2. fsync it (the bytes are on disk, not only in the page cache)
//   3. rename it over <path> (POSIX rename is atomic: readers see the old or the new file)
//   4. fsync the folder (the rename itself is on disk)
// If any step fails, the temporary file is removed, <path> is untouched, and
// std::runtime_error says which step failed on which file. (Step 4 failing is the one
// exception: the new file is in place, but a crash could still undo the rename; the error
// says so.)
//
// Stale temporaries. A process killed during step 1 or 2 (kill -9, a power cut) leaves its
// <path>.tmp.<pid> behind; every kill would leave another. So step 0 removes each regular
// file named exactly <path>.tmp.<digits> whose process is gone (kill(pid, 0) says "no such
// process"). Two processes saving the same path at once keep each other's temporaries,
// because both are alive; the last rename wins, as it would anyway. The one case this rule
// cannot see is a saver whose pid means nothing here: one on another machine writing over
// a network file system, or in another PID namespace (container). Do not point two such
// writers at one path.
#include <cstddef>
#include <cstdint>
#include <string>

namespace hg::io {

void write_file_atomic(const std::string& path, const void* data, size_t size);
inline void write_file_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, text.data(), text.size());
}

// The temporary name step 1 uses for `path` in this process.
std::string atomic_temp_path(const std::string& path);

// Step 0 alone: removes <path>.tmp.<pid> files of processes that no longer exist; returns
// how many. Best effort: a file that cannot be removed is left (it costs disk, not data).
int remove_stale_temporaries(const std::string& path);

// mkdir -p; throws naming the folder that could not be made.
void make_dirs(const std::string& dir);

}  // namespace hg::io
