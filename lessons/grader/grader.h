#pragma once
// lessons/grader/grader.h — what every chapter's check.cpp is built on.
//
// A grader runs a list of checks on the learner's exercise.cpp and prints, for each, [ok] or
// [WRONG] with what went wrong in words (never the code of the answer). It ends with a score
// "x of y", the README section that teaches the idea, and the hint command.
//
//   grader::Grader g({"04", "F32 -> F16, rounded to nearest even", "04_number_formats",
//                     "Rounding"}, argc, argv);
//   g.own_code_only({{"hg::float_to_half_bits", "halfgrad's own F32 -> F16 conversion"}});
//   g.check("zeros and signs", [&] { return got == want ? "" : "the sign is lost ..."; });
//   return g.finish();
//
// A check's body returns "" when right, or the explanation when wrong; an exception thrown by
// the learner's code fails the check with its message.
//
// Own code only. A grader must not be passed by calling the framework's implementation of
// the answer (`return hg::float_to_half_bits(x);`). lessons/CMakeLists.txt compiles
// exercise.cpp as an object file of its own, with -fno-inline, so that every function it
// calls stays visible as a symbol: undefined (U) when it lives in libhalfgrad, weak (W) when
// it is an inline function of a framework header. own_code_only() lists the object's symbols
// with `nm -C` (and its instructions with `objdump -d`, for the F16C/BF16 conversion
// instructions) and fails the whole exercise, score 0, when one of the chapter's denied
// functions appears. The path of the object and of the tools are compiled in.
//
// Command line of every grader:
//   check_NN                 grade, print the checks; exit 0 when all pass, 1 otherwise
//   check_NN --result FILE   also write the outcome for ./lab check all --report:
//                            lines chapter=NN passed=0|1 score=x of=y
//   check_NN --quick         sample the exhaustive sweeps (every float32 bit pattern) instead
//                            of running all 2^32 inputs: what the test suite uses
#include <functional>
#include <string>
#include <vector>

namespace grader {

struct Chapter {
  const char* number;   // "04"
  const char* title;    // what the learner writes, in a few words
  const char* slug;     // "04_number_formats": the folder under lessons/
  const char* section;  // the README heading (without "## ") that teaches the idea
};

// A function (demangled name, or a prefix ending in "::" for a whole class or namespace) or
// an instruction mnemonic the exercise must not use, and what it is.
struct Denied {
  std::string name;
  std::string what;
};

// The object file of the exercise this grader was linked with, read by own_code_only().
// Defined in a source hg_add_grader generates for every grader (lessons/CMakeLists.txt).
extern const char* const kExerciseObject;

class Grader {
 public:
  Grader(Chapter chapter, int argc, char** argv, const char* exercise_object = kExerciseObject);

  // Reads exercise.cpp's object file. Returns false, and marks the exercise failed, when it
  // calls a denied function or contains a denied instruction (or cannot be read).
  bool own_code_only(const std::vector<Denied>& functions,
                     const std::vector<Denied>& instructions = {});

  // One graded check. The body runs unless the exercise was refused by own_code_only() or
  // stop_at_first_failure() applies; it returns "" for right, else why it is wrong.
  bool check(const std::string& what, const std::function<std::string()>& body);

  // From now on, after a failed check the remaining ones are listed but not run (for
  // graders whose checks go from easy to hard, where one mistake explains the rest).
  void stop_at_first_failure(bool on = true) { stop_at_first_failure_ = on; }

  // Prints the score and where to read on; writes --result FILE. Returns the exit code.
  int finish();

  // A line of extra information under the checks (not graded).
  void note(const std::string& text);

  // --quick: the exhaustive sweeps take a sample instead.
  bool quick() const { return quick_; }

 private:
  Chapter chapter_;
  std::string object_;
  std::string result_path_;
  bool refused_ = false;
  bool quick_ = false;
  bool stop_at_first_failure_ = false;
  bool failed_once_ = false;
  std::string last_why_;  // the last explanation printed (a repeat is not printed again)
  int passed_ = 0, total_ = 0;
};

// Formats like printf into a std::string (for the explanations).
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// The bits of a float as 0x%08x and a value with 9 significant digits: "1.00048828 (0x3a801000)".
std::string show_float(float x);

// "(README: \"## 3. Subnormals\")": where an explanation sends the learner; with a chapter
// folder, a heading of that chapter's README ("(README of 04_number_formats: ...)"). Always
// written as see("## heading") or see("## heading", "NN_slug") in check.cpp, so a test can
// find every cited heading and check that the README has it (tests/exercises/cited_sections.sh).
std::string see(const char* heading, const char* chapter_slug = nullptr);

// Relative difference |a - b| / max(|b|, tiny), for tolerances written as a·eps.
double rel_diff(double a, double b);

}  // namespace grader
