// Replays a fuzz corpus through a fuzz target with the normal compiler (a ctest test).
//
//   fuzz_replay_idx tests/fuzz/corpus/idx [more files or folders]
//
// Files named ok_* must be accepted; files named bad_* must be refused with a message that
// names the file. Any other file (a fuzzer's finding added to the corpus) only has to be
// handled without a crash. Prints one line per file and a summary; exit 1 on a mismatch.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_target.h"

static void collect(const std::string& path, std::vector<std::string>& files) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "replay: cannot find %s\n", path.c_str());
    std::exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    files.push_back(path);
    return;
  }
  DIR* d = ::opendir(path.c_str());
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) collect(path + "/" + n, files);
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) collect(argv[i], files);
  int failures = 0, ok = 0, bad = 0, other = 0;
  for (const std::string& path : files) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string base = path.substr(path.rfind('/') + 1);
    std::string error;
    const bool accepted = hg_fuzz_one(bytes.data(), bytes.size(), base, error);
    const char* verdict = "ok";
    if (base.rfind("ok_", 0) == 0) {
      ++ok;
      if (!accepted) verdict = "NOT OK (a good file was refused)", ++failures;
    } else if (base.rfind("bad_", 0) == 0) {
      ++bad;
      if (accepted) verdict = "NOT OK (a bad file was accepted)", ++failures;
      else if (error.find(base) == std::string::npos) verdict = "NOT OK (the message does not name the file)", ++failures;
    } else {
      ++other;
    }
    std::printf("%-44s %6zu bytes  %s  %s\n", base.c_str(), bytes.size(), verdict,
                accepted ? "(accepted)" : error.c_str());
  }
  std::printf("%zu files: %d good, %d bad, %d other; %d mismatches\n", files.size(), ok, bad, other, failures);
  return failures ? 1 : 0;
}
