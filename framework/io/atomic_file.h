#pragma once
// Writing a file so that a reader (or a crash) never sees half of it.
//
//   1. write everything to a temporary file in the SAME folder (<path>.tmp.<pid>)
//   2. fsync it (the bytes are on disk, not only in the page cache)
//   3. rename it over <path> (POSIX rename is atomic: readers see the old or the new file)
//   4. fsync the folder (the rename itself is on disk)
// If any step fails, the temporary file is removed, <path> is untouched, and
// std::runtime_error says which step failed on which file.
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

// mkdir -p; throws naming the folder that could not be made.
void make_dirs(const std::string& dir);

}  // namespace hg::io
