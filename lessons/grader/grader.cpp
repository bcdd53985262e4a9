#include "lessons/grader/grader.h"

#include <cxxabi.h>

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
#include <memory>
#include <sstream>
#include <unordered_map>

// The tools, as CMake found them (lessons/CMakeLists.txt).
#ifndef HG_NM
#define HG_NM "nm"
#endif
#ifndef HG_OBJDUMP
#define HG_OBJDUMP "objdump"
#endif
#ifndef HG_READELF
#define HG_READELF "readelf"
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

// A symbol as the learner would write it: the name without its parameter list.
std::string short_name(const std::string& symbol) {
  size_t depth = 0;
  for (size_t i = 0; i < symbol.size(); ++i) {
    if (symbol[i] == '<') ++depth;
    if (symbol[i] == '>' && depth > 0) --depth;
    // "operator()" and "operator<" keep their own brackets
    if (symbol[i] == '(' && depth == 0 && !(i >= 8 && symbol.compare(i - 8, 8, "operator") == 0))
      return symbol.substr(0, i);
  }
  return symbol;
}

std::string demangled(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
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

// splitmix64: a well-mixed 64-bit number from any 64-bit number.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// "--seed N": a decimal number from 0 to 2^64 - 1.
bool seed_arg(const char* text, uint64_t& seed) {
  if (!*text) return false;
  for (const char* p = text; *p; ++p)
    if (*p < '0' || *p > '9') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long s = std::strtoull(text, &end, 10);
  if (errno == ERANGE || *end != '\0') return false;
  seed = uint64_t(s);
  return true;
}

// One line for the --result file: the first line of `text`, without the key=value separator
// troubles a newline would make.
std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

const std::vector<Denied> kDeniedEverywhere = {
    {"getenv", "which reads the environment"},
    {"secure_getenv", "which reads the environment"},
    {"environ", "the environment"},
    {"__environ", "the environment"},
    {"dlopen", "which loads code at run time, past this inspection"},
    {"dlsym", "which looks a function up by its name at run time, past this inspection"},
    {"dlvsym", "which looks a function up by its name at run time, past this inspection"},
    {"dladdr", "which looks functions up at run time, past this inspection"},
    {"dl_iterate_phdr", "which walks the program's own code at run time, past this inspection"},
    {"_r_debug", "the dynamic linker's list of the program's code, past this inspection"},
};

bool mentions(const std::string& symbol, const std::string& denied) {
  const bool prefix = denied.size() > 2 && denied.compare(denied.size() - 2, 2, "::") == 0;
  const bool exact_overload = denied.find('(') != std::string::npos;
  for (size_t at = symbol.find(denied); at != std::string::npos; at = symbol.find(denied, at + 1)) {
    if (at > 0 && is_name_char(symbol[at - 1])) continue;
    const size_t end = at + denied.size();
    if (prefix || exact_overload) return true;
    // The whole name: followed by nothing (a variable, an inlined function's name), its
    // parameters, its template arguments, a member ("::"), or whatever ends a name in a
    // parameter list or a template argument list (" const", ",", ">", "&", ")").
    if (end == symbol.size() || !is_name_char(symbol[end]) || symbol.compare(end, 2, "::") == 0) return true;
  }
  return false;
}

// readelf prints one DIE (debugging information entry) a line, then its attributes:
//    <1><7c19>: Abbrev Number: 40 (DW_TAG_subprogram)
//       <7c1a>   DW_AT_specification: <0x6a36>
//       <6a37>   DW_AT_name        : (indirect string, offset: 0x5b23): convert_bits
//       <6a3e>   DW_AT_linkage_name: (indirect string, offset: 0x8ec8): _ZN2hg12convert_bits...
// An inlined call is a DW_TAG_inlined_subroutine whose DW_AT_abstract_origin leads, through
// DW_AT_specification, to the function's declaration: its linkage (mangled) name, or its
// name inside the namespaces and classes that enclose it.
std::vector<std::string> inlined_functions(const std::string& debug_info) {
  struct Die {
    std::string tag, scope, name, linkage;
    uint64_t origin = 0, specification = 0;
  };
  std::unordered_map<uint64_t, Die> dies;
  std::vector<uint64_t> calls;
  std::vector<std::string> scope_at;  // the scope name each depth adds ("" for none)
  Die* die = nullptr;
  int depth = 0;
  auto value_of = [](const std::string& line, size_t colon) {
    std::string v = line.substr(colon + 1);
    v.erase(0, v.find_first_not_of(' '));
    if (!v.empty() && v[0] == '(') {  // "(indirect string, offset: 0x5b23): name"
      const size_t close = v.find("): ");
      if (close != std::string::npos) v = v.substr(close + 3);
    }
    while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
    return v;
  };
  auto reference = [](const std::string& v) -> uint64_t {
    const size_t at = v.find("<0x");
    return at == std::string::npos ? 0 : std::strtoull(v.c_str() + at + 3, nullptr, 16);
  };
  std::istringstream lines(debug_info);
  for (std::string line; std::getline(lines, line);) {
    const size_t lead = line.find_first_not_of(' ');
    if (lead == std::string::npos || line[lead] != '<') continue;
    const size_t tag_at = line.find("(DW_TAG_");
    if (line.find("Abbrev Number:") != std::string::npos) {  // " <d><offset>: Abbrev Number: n (TAG)"
      die = nullptr;
      if (tag_at == std::string::npos) continue;  // the end of a list of children
      depth = std::atoi(line.c_str() + lead + 1);
      const size_t off_at = line.find('<', lead + 1);
      const uint64_t offset = std::strtoull(line.c_str() + off_at + 1, nullptr, 16);
      if (depth < 0 || depth > 1000) continue;
      scope_at.resize(size_t(depth) + 1);
      scope_at[size_t(depth)].clear();
      die = &dies[offset];
      die->tag = line.substr(tag_at + 1, line.find(')', tag_at) - tag_at - 1);
      for (int d = 0; d < depth; ++d)
        if (!scope_at[size_t(d)].empty()) die->scope += scope_at[size_t(d)] + "::";
      if (die->tag == "DW_TAG_inlined_subroutine") calls.push_back(offset);
      if (die->tag == "DW_TAG_namespace") scope_at[size_t(depth)] = "(anonymous namespace)";
      continue;
    }
    if (!die) continue;
    const size_t attr = line.find("DW_AT_");
    const size_t colon = attr == std::string::npos ? attr : line.find(':', attr);
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(attr, line.find_first_of(" :", attr) - attr);
    const std::string value = value_of(line, colon);
    if (key == "DW_AT_name") {
      die->name = value;
      if (die->tag == "DW_TAG_namespace" || die->tag == "DW_TAG_class_type" ||
          die->tag == "DW_TAG_structure_type" || die->tag == "DW_TAG_union_type")
        scope_at[size_t(depth)] = value;
    } else if (key == "DW_AT_linkage_name" || key == "DW_AT_MIPS_linkage_name") {
      die->linkage = value;
    } else if (key == "DW_AT_abstract_origin") {
      die->origin = reference(value);
    } else if (key == "DW_AT_specification") {
      die->specification = reference(value);
    }
  }
  std::vector<std::string> out;
  for (uint64_t call : calls) {
    uint64_t at = dies[call].origin;
    std::string name;
    for (int hop = 0; hop < 8 && at != 0 && name.empty(); ++hop) {
      const auto it = dies.find(at);
      if (it == dies.end()) break;
      const Die& d = it->second;
      if (!d.linkage.empty()) name = demangled(d.linkage);
      else if (d.origin) at = d.origin;
      else if (d.specification) at = d.specification;
      else if (!d.name.empty()) name = d.scope + d.name;
      else break;
    }
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

std::vector<uint32_t> digest_keys(size_t n, uint64_t seed) {
  std::vector<uint32_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = uint32_t(mix(seed ^ mix(uint64_t(i)))) | 1;  // odd
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

std::string first_wrong(std::initializer_list<std::function<std::string()>> parts) {
  for (const auto& part : parts) {
    std::string why = part();
    if (!why.empty()) return why;
  }
  return "";
}

double rel_diff(double a, double b) {
  return std::fabs(a - b) / std::max(std::fabs(b), 1e-300);
}

Grader::Grader(Chapter chapter, int argc, char** argv, const char* exercise_object, const char* refusal,
               const char* sha256)
    : chapter_(chapter), object_(exercise_object), sha256_(sha256 ? sha256 : "") {
  bool seeded = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--result" && i + 1 < argc) {
      result_path_ = argv[++i];
    } else if (arg == "--quick") {
      quick_ = true;
    } else if (arg == "--time-limit" && i + 1 < argc && seconds_arg(argv[i + 1], seconds_)) {
      ++i;
    } else if (arg == "--seed" && i + 1 < argc && seed_arg(argv[i + 1], seed_)) {
      seeded = true;
      ++i;
    } else {
      std::fprintf(stderr, "check_%s: unknown argument '%s' (usage: check_%s [--result FILE] [--quick] "
                   "[--seed N, 0 to 2^64-1] [--time-limit SECONDS, at most 3600])\n", chapter.number, arg.c_str(),
                   chapter.number);
      std::exit(2);
    }
  }
  if (!seeded) {  // drawn now: the inputs of this grading are not those of any earlier one
    std::random_device device;
    seed_ = (uint64_t(device()) << 32) ^ uint64_t(device());
  }
  std::printf("Chapter %s exercise: %s\n(lessons/%s/exercise.cpp)\n\n", chapter.number, chapter.title,
              chapter.slug);
  if (refusal && *refusal) {  // the build's vetting (vet_exercise.sh): nothing of exercise.cpp was linked
    std::printf("  [WRONG] exercise.cpp cannot be graded:\n");
    print_indented(std::string(refusal) + "\nNo check counts while it is there.");
    std::printf("\n");
    refuse(refusal);
  }
}

uint64_t Grader::seed_for(uint64_t stream) const { return mix(seed_ ^ mix(stream)); }

void Grader::refuse(const std::string& why) {
  refused_ = true;
  if (refused_why_.empty()) refused_why_ = first_line(why);
}

bool Grader::own_code_only(const std::vector<Denied>& functions, const std::vector<Denied>& instructions) {
  if (refused_) return false;
  bool ok = false;
  const std::string& object = object_;
  if (object.empty()) {
    std::printf("  [WRONG] this grader was built without the path of the exercise's object file: "
                "build it with lessons/CMakeLists.txt's hg_add_grader.\n");
    refuse("the grader was built without the exercise's object file");
    return false;
  }
  const std::string symbols = command_output(std::string(HG_NM) + " -C " + quoted(object) + " 2>&1", ok);
  if (!ok) {
    std::printf("  [WRONG] exercise.cpp could not be inspected: `%s -C %s` failed:\n%s\n", HG_NM,
                object.c_str(), symbols.c_str());
    refuse("exercise.cpp could not be inspected (nm failed)");
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
    // t with "[clone": the compiler's own copy of such a function, specialised for its caller.
    if (type == "U" || type == "W" || type == "w" || type == "V" || type == "v" || type == "u" ||
        type == "i" || (type == "t" && name.find(" [clone ") != std::string::npos))
      used.push_back(name);
  }
  // What the compiler inlined although -fno-inline asked it not to (always_inline functions).
  const std::string debug_info =
      command_output(std::string(HG_READELF) + " --debug-dump=info -W " + quoted(object) + " 2>/dev/null", ok);
  if (!ok) {
    std::printf("  [WRONG] exercise.cpp could not be inspected: `%s --debug-dump=info %s` failed.\n", HG_READELF,
                object.c_str());
    refuse("exercise.cpp could not be inspected (readelf failed)");
    return false;
  }
  const size_t symbol_count = used.size();
  for (const std::string& f : inlined_functions(debug_info)) used.push_back(f);

  // "calls <the denied name>" (or, for a whole class or namespace, the function found in it).
  auto refuse_use = [&](const std::string& symbol, bool inlined, const Denied& d, const char* why) {
    const bool prefix = d.name.size() > 2 && d.name.compare(d.name.size() - 2, 2, "::") == 0;
    const std::string name = (prefix ? short_name(symbol) : d.name) + (inlined ? " (inlined)" : "");
    std::printf("  [WRONG] exercise.cpp calls %s, %s.\n", name.c_str(), d.what.c_str());
    print_indented(std::string(why) + "\nNo check counts while it is used.");
    std::printf("\n");
    refuse("calls " + name + ", " + d.what);
  };
  for (size_t i = 0; i < used.size(); ++i)
    for (const Denied& d : kDeniedEverywhere)
      if (mentions(used[i], d.name)) {
        refuse_use(used[i], i >= symbol_count, d,
                   "A graded function computes its answer from its arguments alone, with the code it is "
                   "linked with: no environment variables, no code looked up while it runs.");
        return false;
      }
  for (const Denied& d : functions)
    for (size_t i = 0; i < used.size(); ++i)
      if (mentions(used[i], d.name)) {
        refuse_use(used[i], i >= symbol_count, d,
                   "That is the answer already written; the exercise is to write it yourself.");
        return false;
      }
  if (!instructions.empty()) {
    const std::string code =
        command_output(std::string(HG_OBJDUMP) + " -d --no-show-raw-insn " + quoted(object) + " 2>&1", ok);
    if (!ok) {
      std::printf("  [WRONG] exercise.cpp could not be disassembled with %s:\n%s\n", HG_OBJDUMP, code.c_str());
      refuse("exercise.cpp could not be disassembled (objdump failed)");
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
            refuse("uses the instruction " + d.name + ", " + d.what);
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
  if (!failed_once_) first_wrong_ = what + ": " + first_line(why);
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
    if (!f ||
        std::fprintf(f, "chapter=%s\npassed=%d\nscore=%d\nof=%d\nseed=%llu\nsha256=%s\nrefused=%s\nwrong=%s\n",
                     chapter_.number, passed ? 1 : 0, passed_, total_, (unsigned long long)seed_, sha256_.c_str(),
                     refused_why_.c_str(), refused_ ? "" : first_wrong_.c_str()) < 0 ||
        std::fclose(f) != 0 || std::rename(tmp.c_str(), result_path_.c_str()) != 0) {
      std::fprintf(stderr, "check_%s: cannot write %s: %s\n", chapter_.number, result_path_.c_str(),
                   std::strerror(errno));
      return 2;
    }
  }
  return passed ? 0 : 1;
}

}  // namespace grader
