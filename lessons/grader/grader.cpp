#include "lessons/grader/grader.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <exception>
#include <sstream>

// The tools, as CMake found them (lessons/CMakeLists.txt).
#ifndef HG_NM
#define HG_NM "nm"
#endif
#ifndef HG_OBJDUMP
#define HG_OBJDUMP "objdump"
#endif

namespace grader {

namespace {

// stdout of a command, or an empty string with ok = false when it could not run.
std::string command_output(const std::string& cmd, bool& ok) {
  std::string out;
  ok = false;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ok = pclose(p) == 0;
  return out;
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}

// Does the demangled symbol use `denied`? A whole word match: "hg::amp::next_scale" matches
// "hg::amp::next_scale(hg::amp::ScaleState const&, bool, ...)" but not "my_next_scale(...)";
// a name ending in "::" matches every member of that class or namespace; a name with a
// parameter list matches that overload only.
bool mentions(const std::string& symbol, const std::string& denied) {
  const bool prefix = denied.size() > 2 && denied.compare(denied.size() - 2, 2, "::") == 0;
  const bool exact_overload = denied.find('(') != std::string::npos;
  for (size_t at = symbol.find(denied); at != std::string::npos; at = symbol.find(denied, at + 1)) {
    if (at > 0 && is_name_char(symbol[at - 1])) continue;
    const size_t end = at + denied.size();
    if (prefix || exact_overload) return true;
    if (end == symbol.size() || symbol[end] == '(' || symbol[end] == '<' || symbol[end] == ' ') return true;
  }
  return false;
}

// Prints text under a check, indented, each line wrapped at about 100 columns.
void print_indented(const std::string& text) {
  const size_t width = 88;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    while (line.size() > width) {
      size_t cut = line.rfind(' ', width);
      if (cut == std::string::npos || cut == 0) cut = line.find(' ', width);
      if (cut == std::string::npos) break;
      std::printf("          %s\n", line.substr(0, cut).c_str());
      line.erase(0, cut + 1);
    }
    std::printf("          %s\n", line.c_str());
  }
}

// "--time-limit S": S seconds, more than 0 and at most an hour.
bool seconds_arg(const char* text, double& seconds) {
  char* end = nullptr;
  const double s = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(s > 0 && s <= 3600)) return false;
  seconds = s;
  return true;
}

}  // namespace

std::vector<uint32_t> digest_keys(size_t n) {
  std::vector<uint32_t> keys(n);
  for (size_t i = 0; i < n; ++i) {  // splitmix64 of i, made odd
    uint64_t z = (uint64_t(i) + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    keys[i] = uint32_t(z ^ (z >> 31)) | 1;
  }
  return keys;
}

std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[1024];
  va_list copy;
  va_copy(copy, ap);
  const int n = std::vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  std::string out;
  if (n < int(sizeof small)) {
    out = small;
  } else {
    out.resize(size_t(n) + 1);
    std::vsnprintf(out.data(), out.size(), fmt, ap);
    out.resize(size_t(n));
  }
  va_end(ap);
  return out;
}

std::string show_float(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return format("%.9g (0x%08x)", double(x), u);
}

std::string see(const char* heading, const char* chapter_slug) {
  if (chapter_slug) return format("(README of %s: \"%s\")", chapter_slug, heading);
  return format("(README: \"%s\")", heading);
}

double rel_diff(double a, double b) {
  return std::fabs(a - b) / std::max(std::fabs(b), 1e-300);
}

Grader::Grader(Chapter chapter, int argc, char** argv, const char* exercise_object, const char* refusal)
    : chapter_(chapter), object_(exercise_object) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--result" && i + 1 < argc) {
      result_path_ = argv[++i];
    } else if (arg == "--quick") {
      quick_ = true;
    } else if (arg == "--time-limit" && i + 1 < argc && seconds_arg(argv[i + 1], seconds_)) {
      ++i;
    } else {
      std::fprintf(stderr, "check_%s: unknown argument '%s' (usage: check_%s [--result FILE] [--quick] "
                   "[--time-limit SECONDS, at most 3600])\n", chapter.number, arg.c_str(), chapter.number);
      std::exit(2);
    }
  }
  std::printf("Chapter %s exercise: %s\n(lessons/%s/exercise.cpp)\n\n", chapter.number, chapter.title,
              chapter.slug);
  if (refusal && *refusal) {  // the build's vetting (vet_exercise.sh): nothing of exercise.cpp was linked
    std::printf("  [WRONG] exercise.cpp cannot be graded:\n");
    print_indented(std::string(refusal) + "\nNo check counts while it is there.");
    std::printf("\n");
    refused_ = true;
  }
}

bool Grader::own_code_only(const std::vector<Denied>& functions, const std::vector<Denied>& instructions) {
  if (refused_) return false;
  bool ok = false;
  const std::string& object = object_;
  if (object.empty()) {
    std::printf("  [WRONG] this grader was built without the path of the exercise's object file: "
                "build it with lessons/CMakeLists.txt's hg_add_grader.\n");
    refused_ = true;
    return false;
  }
  const std::string symbols = command_output(std::string(HG_NM) + " -C " + quoted(object) + " 2>&1", ok);
  if (!ok) {
    std::printf("  [WRONG] exercise.cpp could not be inspected: `%s -C %s` failed:\n%s\n", HG_NM,
                object.c_str(), symbols.c_str());
    refused_ = true;
    return false;
  }
  std::vector<std::string> used;
  std::istringstream lines(symbols);
  for (std::string line; std::getline(lines, line);) {
    // "                 U name"  or  "0000000000000000 W name"
    std::istringstream fields(line);
    std::string first, type;
    fields >> first;
    if (first.size() == 1) {
      type = first;
    } else {
      fields >> type;
    }
    std::string name;
    std::getline(fields, name);
    if (!name.empty() && name[0] == ' ') name.erase(0, 1);
    // U: called, defined in a library. W/V/u/i: an inline (header) function or object it uses.
    if (type == "U" || type == "W" || type == "w" || type == "V" || type == "v" || type == "u" ||
        type == "i")
      used.push_back(name);
  }
  for (const Denied& d : functions)
    for (const std::string& s : used)
      if (mentions(s, d.name)) {
        std::printf("  [WRONG] exercise.cpp calls %s, %s.\n"
                    "          That is the answer already written; the exercise is to write it "
                    "yourself.\n          No check counts while it is used.\n\n",
                    d.name.c_str(), d.what.c_str());
        refused_ = true;
        return false;
      }
  if (!instructions.empty()) {
    const std::string code =
        command_output(std::string(HG_OBJDUMP) + " -d --no-show-raw-insn " + quoted(object) + " 2>&1", ok);
    if (!ok) {
      std::printf("  [WRONG] exercise.cpp could not be disassembled with %s:\n%s\n", HG_OBJDUMP, code.c_str());
      refused_ = true;
      return false;
    }
    std::istringstream code_lines(code);
    for (std::string line; std::getline(code_lines, line);) {
      std::istringstream words(line);
      for (std::string w; words >> w;)
        for (const Denied& d : instructions)
          if (w == d.name) {
            std::printf("  [WRONG] exercise.cpp uses the instruction %s, %s.\n"
                        "          The hardware's answer is not yours; the exercise is to write it "
                        "yourself.\n          No check counts while it is used.\n\n",
                        d.name.c_str(), d.what.c_str());
            refused_ = true;
            return false;
          }
    }
  }
  return true;
}

bool Grader::check(const std::string& what, const std::function<std::string()>& body) {
  ++total_;
  if (refused_) {
    std::printf("  [ -- ]  %s  (not graded: see above)\n", what.c_str());
    return false;
  }
  if (stop_at_first_failure_ && failed_once_) {
    std::printf("  [ -- ]  %s  (not run: fix the one above first)\n", what.c_str());
    return false;
  }
  if (timed_out_) {
    std::printf("  [ -- ]  %s  (not run: the code above did not finish)\n", what.c_str());
    return false;
  }
  std::string why;
  try {
    why = body();
  } catch (const Failed& e) {  // the learner's code, in its child
    why = e.what();
    timed_out_ = e.timed_out();
  } catch (const std::exception& e) {  // the grader's own computation
    why = std::string("the check itself could not run: ") + e.what();
  }
  std::fflush(stdout);
  if (why.empty()) {
    ++passed_;
    std::printf("  [ok]    %s\n", what.c_str());
    return true;
  }
  failed_once_ = true;
  std::printf("  [WRONG] %s\n", what.c_str());
  print_indented(why == last_why_ ? "(the same as above)" : why);
  last_why_ = why;
  return false;
}

void Grader::note(const std::string& text) { print_indented(text); }

void Grader::saw_sandbox(bool sandboxed) {
  if (sandboxed || said_no_sandbox_) return;
  said_no_sandbox_ = true;
  note("(This system does not let the grader install its sandbox (Linux seccomp): exercise.cpp's code ran "
       "with the time and memory limits only, and could reach your files.)");
}

int Grader::finish() {
  const bool passed = !refused_ && passed_ == total_ && total_ > 0;
  std::printf("\n");
  if (passed) {
    std::printf("PASS: score %d of %d (chapter %s: %s).\n", passed_, total_, chapter_.number, chapter_.title);
  } else {
    std::printf("Not yet: score %d of %d.\n", passed_, total_);
    std::printf("Read \"## %s\" in lessons/%s/README.md, change exercise.cpp, and run ./lab check %s "
                "again.\nStuck? ./lab check %s --hint   (run it again for the next hint)\n",
                chapter_.section, chapter_.slug, chapter_.number, chapter_.number);
  }
  if (!result_path_.empty()) {
    const std::string tmp = result_path_ + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (!f || std::fprintf(f, "chapter=%s\npassed=%d\nscore=%d\nof=%d\n", chapter_.number, passed ? 1 : 0,
                           passed_, total_) < 0 || std::fclose(f) != 0 ||
        std::rename(tmp.c_str(), result_path_.c_str()) != 0) {
      std::fprintf(stderr, "check_%s: cannot write %s: %s\n", chapter_.number, result_path_.c_str(),
                   std::strerror(errno));
      return 2;
    }
  }
  return passed ? 0 : 1;
}

}  // namespace grader
