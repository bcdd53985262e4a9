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
//   g.check("zeros and signs", [&] {
//     const uint16_t got = g.run([&] { return student_float_to_half(-0.0f); });  // in a child
//     return got == 0x8000 ? "" : "the sign is lost ...";                         // here
//   });
//   return g.finish();
//
// A check's body returns "" when right, or the explanation when wrong.
//
// In this file: Chapter, Denied, Failed; wire:: (the bytes an answer travels as); Grader
// (check, run, start, own_code_only, finish); sized(); first_wrong_float() (the 2^32 sweeps);
// format(), show_float(), see(), rel_diff(). lessons/grader/child.cpp runs the children,
// lessons/grader/vet_exercise.sh vets an exercise before it is linked.
//
// The learner's code runs only in a child. Every call into exercise.cpp is made inside
// g.run(fn): fn runs in a child process (fork: a copy of this one, inputs included) under a
// time limit (--time-limit, 60 s), a memory limit (2 GiB more than the grader holds) and a
// sandbox (seccomp) that lets it compute, allocate and print but not open, write or delete a
// file, start a program or reach the network. What fn returns comes back through a pipe, and
// the check compares it here, in the grader's own process, which exercise.cpp's code never
// runs in: so the verdict, the score and the --result file are the grader's, not something
// the exercise can print or write. An exception the learner's code throws, a crash, an
// endless loop or a forbidden system call fails the check with its own message; after an
// endless loop the checks below it are not run (each would wait out the limit again).
//
// Before main(). Static initialisers of exercise.cpp would run in this process, before the
// grader could fork; so the build refuses, before linking, an exercise object that has code
// to run before main() or after it, that defines a function of the C library, the C++
// runtime, halfgrad or the grader in its place, or that #includes a solution (or any .cpp):
// lessons/grader/vet_exercise.sh, run by lessons/CMakeLists.txt's hg_add_grader. A refused
// exercise is not linked at all; the grader says why (kExerciseRefusal) and grades nothing.
//
// Own code only. A grader must not be passed by calling the framework's implementation of
// the answer (`return hg::float_to_half_bits(x);`). lessons/CMakeLists.txt compiles
// exercise.cpp as an object file of its own, with -fno-inline and -g, so that every function
// it uses stays visible: as a symbol, undefined (U) when it lives in libhalfgrad, weak (W)
// when it is an inline function of a framework header; and, where the compiler inlines all
// the same (an always_inline function such as hg::convert_bits), in the debug information,
// which records every inlined call with the function it came from. own_code_only() lists
// both (`nm -C`, `readelf --debug-dump=info`) and the instructions (`objdump -d`, for the
// F16C/BF16 conversion instructions), and fails the whole exercise, score 0, when one of the
// chapter's denied functions appears in any form: a function, a member of a denied class or
// namespace (hg::fp8::DelayedScaling::update), a template or an operator of one. Denied in
// every chapter (kDeniedEverywhere): the environment and code looked up by name while it
// runs; the answer comes from the arguments alone. The path of the object and of the tools
// are compiled in.
//
// Fresh inputs. A grading draws its inputs from a seed drawn at grading time (--seed N gives
// a chosen one, to repeat a grading), so a table of the answers one grading asked for, or a
// file of them replayed in call order, fails the next. A check takes its random numbers from
// seed_for(stream) (one stream per check, so that a check's inputs do not depend on which
// checks ran before it), hands hand-picked edge cases over in an order shuffle() draws, and
// samples the sweeps (--quick) at an offset drawn from the seed. The seed is in --result,
// so the teacher's table (./lab class grade) says which inputs graded each file.
//
// Limits, honestly. The child is a copy of this process: whatever the grader computed before
// the call is in its memory, so a check computes its expected answer after run() where it
// can. What comes back through the pipe is only ever taken as the learner's answer (the
// learner's code can write there too), never as a verdict. The build refuses the reference
// solution copied whole (comments and spaces aside, vet_exercise.sh) where the solution is
// there to compare with, that is on the teacher's copy, not in the student edition; a copy
// with the names changed still passes. An exercise may embed a file with an assembler .incbin
// (which no #include check sees; fresh inputs make a file of answers useless), compute with a
// constexpr function of halfgrad at compile time (on constants only, not on the inputs), or
// redefine an inline function of halfgrad's headers differently (check.cpp's object is linked
// first, so its own copies win where it uses them); the sandbox needs Linux's seccomp on
// x86-64 or AArch64, and where it is missing the grader says so, once.
//
// Command line of every grader:
//   check_NN                 grade, print the checks; exit 0 when all pass, 1 otherwise
//   check_NN --result FILE   also write the outcome for ./lab check and ./lab class grade,
//                            one key=value a line: chapter=NN passed=0|1 score=x of=y
//                            seed=N (the inputs) sha256=HEX (of the exercise.cpp graded)
//                            refused=WHY (empty unless refused) wrong=CHECK: WHY (the first
//                            wrong check, its first line; empty when none)
//   check_NN --quick         sample the exhaustive sweeps (every float32 bit pattern) instead
//                            of running all 2^32 inputs: what the test suite uses
//   check_NN --seed N        draw the inputs from N (0 to 2^64-1) instead of a fresh seed
//   check_NN --time-limit S  each run() may take S seconds (default 60)
#include <cstdint>
#include <cstring>
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "framework/tensor/tensor.h"

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

// Denied in every chapter, on top of its own list: the environment (getenv reads memory, so
// the sandbox, which stops files, programs and the network when the code runs, cannot see it;
// the child also empties its environment) and looking code up by name while it runs (dlsym:
// a call this inspection would not see).
extern const std::vector<Denied> kDeniedEverywhere;

// Does the demangled symbol use `denied`? A whole-name match: "hg::amp::next_scale" matches
// "hg::amp::next_scale(hg::amp::ScaleState const&, bool)", "hg::amp::next_scale<float>(...)",
// a member "hg::amp::next_scale::x" and "std::vector<hg::amp::next_scale>" but not
// "my_next_scale(...)" or "hg::amp::next_scales";
// a name ending in "::" matches every member of that class or namespace; a name with a
// parameter list matches that overload only.
bool mentions(const std::string& symbol, const std::string& denied);

// The functions whose code the compiler inlined into an object (from `readelf --debug-dump=info`
// of an object compiled with -g), as demangled names: what nm no longer shows.
std::vector<std::string> inlined_functions(const std::string& debug_info);

// The object file of the exercise this grader was linked with, read by own_code_only(), why
// the build refused to link it ("" when it did not), and the SHA-256 of the exercise.cpp it
// was compiled from. All three are defined in a source that vet_exercise.sh writes for every
// grader (lessons/CMakeLists.txt, hg_add_grader).
extern const char* const kExerciseObject;
extern const char* const kExerciseRefusal;
extern const char* const kExerciseSha256;

// What the learner's code did instead of returning an answer (threw, crashed, ran out of
// time or memory, made a forbidden system call): run() throws it into the check's body, and
// the check fails with this text.
class Failed : public std::runtime_error {
 public:
  Failed(const std::string& what, bool timed_out = false) : std::runtime_error(what), timed_out_(timed_out) {}
  bool timed_out() const { return timed_out_; }

 private:
  bool timed_out_;
};

// ---- the bytes between the child and the grader -------------------------------------------
// What run()'s function returns is written with put() in the child and read with get() here:
// numbers, enums and other trivially copyable structs as they are in memory, std::string,
// std::vector, std::pair, std::tuple of those, and hg::Tensor (dtype, shape, values).
namespace wire {

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  void read(void* to, size_t n);  // throws Failed past the end
  void expect_end() const;        // throws Failed when bytes are left over
  // Throws Failed unless `count` items of `size` bytes are left: a length read from the pipe
  // is checked before anything that large is allocated.
  void need(uint64_t count, size_t size) const;

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

template <class T>
constexpr bool kPlain = std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>;

template <class T, std::enable_if_t<kPlain<T>, int> = 0>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T, std::enable_if_t<kPlain<T>, int> = 0>
void get(Reader& in, T& v) {
  in.read(&v, sizeof v);
}

void get(Reader& in, bool& b);  // any byte but 0 is true (a bool holds nothing else)
void put(std::string& out, const std::string& s);
void get(Reader& in, std::string& s);
void put(std::string& out, const hg::Tensor& t);
void get(Reader& in, hg::Tensor& t);
template <class T>
void put(std::string& out, const std::vector<T>& v);
template <class T>
void get(Reader& in, std::vector<T>& v);
template <class A, class B>
void put(std::string& out, const std::pair<A, B>& p);
template <class A, class B>
void get(Reader& in, std::pair<A, B>& p);
template <class... T>
void put(std::string& out, const std::tuple<T...>& t);
template <class... T>
void get(Reader& in, std::tuple<T...>& t);

template <class T>
void put(std::string& out, const std::vector<T>& v) {
  put(out, uint64_t(v.size()));
  if constexpr (kPlain<T>) {
    out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  } else {
    for (const T& x : v) put(out, x);
  }
}
template <class T>
void get(Reader& in, std::vector<T>& v) {
  uint64_t n = 0;
  get(in, n);
  if constexpr (kPlain<T>) {
    in.need(n, sizeof(T));
    v.resize(size_t(n));
    in.read(v.data(), size_t(n) * sizeof(T));
  } else {
    v.clear();
    for (uint64_t i = 0; i < n; ++i) {
      T x{};
      get(in, x);
      v.push_back(std::move(x));
    }
  }
}

template <class A, class B>
void put(std::string& out, const std::pair<A, B>& p) {
  put(out, p.first);
  put(out, p.second);
}
template <class A, class B>
void get(Reader& in, std::pair<A, B>& p) {
  get(in, p.first);
  get(in, p.second);
}

template <class... T>
void put(std::string& out, const std::tuple<T...>& t) {
  std::apply([&](const auto&... x) { (put(out, x), ...); }, t);
}
template <class... T>
void get(Reader& in, std::tuple<T...>& t) {
  std::apply([&](auto&... x) { (get(in, x), ...); }, t);
}

}  // namespace wire

// A child started by Grader::start(): its answer is read with get().
namespace detail {
struct ChildLimits {
  double seconds;        // wall clock, from the fork
  size_t memory_bytes;   // address space it may add to what it inherits
};
class Child {
 public:
  Child(const std::function<std::string()>& body, const ChildLimits& limits);  // forks
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  ~Child();  // a child never collected is killed and reaped
  // Waits for the child (at most its time limit) and returns the bytes it answered; throws
  // Failed when it answered otherwise. The second element: whether it ran in the sandbox.
  std::pair<std::string, bool> collect();

 private:
  int pid_ = -1;
  int fd_ = -1;
  ChildLimits limits_;
  double started_ = 0;  // steady clock, seconds
};
}  // namespace detail

template <class T>
class Running;

class Grader {
 public:
  Grader(Chapter chapter, int argc, char** argv, const char* exercise_object = kExerciseObject,
         const char* refusal = kExerciseRefusal, const char* sha256 = kExerciseSha256);

  // Reads exercise.cpp's object file. Returns false, and marks the exercise failed, when it
  // calls a denied function or contains a denied instruction (or cannot be read).
  bool own_code_only(const std::vector<Denied>& functions,
                     const std::vector<Denied>& instructions = {});

  // One graded check. The body runs unless the exercise was refused (the build, or
  // own_code_only()), stop_at_first_failure() applies, or an earlier check ran out of time;
  // it returns "" for right, else why it is wrong.
  bool check(const std::string& what, const std::function<std::string()>& body);

  // Runs fn, which calls exercise.cpp, in a child process and returns what fn returned (see
  // the top of this file). Throws Failed when the child answered otherwise.
  template <class Fn>
  auto run(Fn&& fn) -> std::invoke_result_t<Fn&>;

  // The same, started now and collected with .get(): this process computes the expected
  // answers meanwhile (the sweeps over every float32).
  template <class Fn>
  Running<std::invoke_result_t<Fn&>> start(Fn&& fn);

  // From now on, after a failed check the remaining ones are listed but not run (for
  // graders whose checks go from easy to hard, where one mistake explains the rest).
  void stop_at_first_failure(bool on = true) { stop_at_first_failure_ = on; }

  // Prints the score and where to read on; writes --result FILE. Returns the exit code.
  int finish();

  // A line of extra information under the checks (not graded).
  void note(const std::string& text);

  // --quick: the exhaustive sweeps take a sample instead.
  bool quick() const { return quick_; }

  // The seed of this grading's inputs, and a seed of its own for each stream (one per check):
  // the same seed and stream always give the same inputs.
  uint64_t seed() const { return seed_; }
  uint64_t seed_for(uint64_t stream) const;
  std::mt19937_64 rng(uint64_t stream) const { return std::mt19937_64(seed_for(stream)); }
  // Puts v (hand-picked cases) in an order drawn from the seed: answers given in the order of
  // one grading's calls do not fit the next.
  template <class V>
  void shuffle(V& v, uint64_t stream) const {
    std::mt19937_64 r = rng(stream);
    std::shuffle(v.begin(), v.end(), r);
  }

  // fn(c) for every case c, in one child, called in an order drawn from stream `stream`;
  // the answers come back in the order of `cases`, so that the check explains the first wrong
  // one of its own list. (A bool answer travels as char: std::vector<bool> has no bytes.)
  template <class Case, class Fn>
  auto answers(const std::vector<Case>& cases, uint64_t stream, Fn fn)
      -> std::vector<std::invoke_result_t<Fn&, const Case&>>;

 private:
  template <class T>
  friend class Running;
  detail::ChildLimits limits() const { return {seconds_, size_t(2) << 30}; }
  void saw_sandbox(bool sandboxed);

  void refuse(const std::string& why);

  Chapter chapter_;
  std::string object_;
  std::string sha256_;
  std::string result_path_;
  uint64_t seed_ = 0;
  bool refused_ = false;
  std::string refused_why_;     // for --result: the first line of why
  std::string first_wrong_;     // for --result: "check: first line of why"
  bool quick_ = false;
  bool stop_at_first_failure_ = false;
  bool failed_once_ = false;
  bool timed_out_ = false;      // a run() ran out of time: the later checks are not run
  bool said_no_sandbox_ = false;
  double seconds_ = 60;         // --time-limit
  std::string last_why_;  // the last explanation printed (a repeat is not printed again)
  int passed_ = 0, total_ = 0;
};

template <class T>
class Running {
 public:
  Running(Grader& g, detail::Child child) : grader_(g), child_(std::move(child)) {}
  T get() {
    auto [bytes, sandboxed] = child_.collect();
    grader_.saw_sandbox(sandboxed);
    if constexpr (!std::is_void_v<T>) {
      wire::Reader in(bytes);
      T value{};
      wire::get(in, value);
      in.expect_end();
      return value;
    }
  }

 private:
  Grader& grader_;
  detail::Child child_;
};

template <class Fn>
Running<std::invoke_result_t<Fn&>> Grader::start(Fn&& fn) {
  using T = std::invoke_result_t<Fn&>;
  detail::Child child(
      [&fn]() -> std::string {
        std::string out;
        if constexpr (std::is_void_v<T>) {
          fn();
        } else {
          wire::put(out, fn());
        }
        return out;
      },
      limits());
  return Running<T>(*this, std::move(child));
}

template <class Fn>
auto Grader::run(Fn&& fn) -> std::invoke_result_t<Fn&> {
  return start(fn).get();
}

template <class V>
V sized(V v, size_t n);

template <class Case, class Fn>
auto Grader::answers(const std::vector<Case>& cases, uint64_t stream, Fn fn)
    -> std::vector<std::invoke_result_t<Fn&, const Case&>> {
  using R = std::invoke_result_t<Fn&, const Case&>;
  static_assert(!std::is_same_v<R, bool>, "return char: std::vector<bool> cannot travel");
  std::vector<size_t> order(cases.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  shuffle(order, stream);
  const std::vector<R> asked = sized(run([&] {
    std::vector<R> out;
    out.reserve(cases.size());
    for (size_t i : order) out.push_back(fn(cases[i]));
    return out;
  }), cases.size());
  std::vector<R> in_order(cases.size());
  for (size_t k = 0; k < order.size(); ++k) in_order[order[k]] = asked[k];
  return in_order;
}

// v, when it has n elements; else throws Failed. What comes back from a child is data the
// learner's code could have written in the grader's place: it is indexed only after this.
template <class V>
V sized(V v, size_t n) {
  if (v.size() != n)
    throw Failed("what exercise.cpp's code returned has " + std::to_string(v.size()) + " values where " +
                 std::to_string(n) + " were asked for");
  return v;
}

// ---- every float32 through a conversion to 16 bits (chapters 04 and 11) ---------------------
// The learner's conversion runs on every float32 bit pattern (with stride > 1, every
// stride-th block of 65536, from a block drawn from the seed among the first stride) in a
// child, with OpenMP; per block it returns a digest of its answers, a
// multilinear hash (sum of key_i * answer_i mod 2^32, odd random keys: one wrong answer in a
// block always changes it, since key_i * d is not 0 mod 2^32 for an odd key and 0 < |d| <
// 2^16), while this process digests the expected answers the same way. The first block whose digests differ is run
// again, answer by answer, to find the first wrong one. `fold` maps every right answer to
// one value (every NaN with the right sign to one NaN), so that "right" is "equal after
// folding", there and here. learner(float) -> uint16_t; expected(const float*, uint16_t*, n)
// fills n expected answers; fold(float, uint16_t) -> uint16_t. (Templates, so that the
// per-input calls are inlined: 2^32 of them.)
struct WrongFloat {
  uint32_t bits;    // the input
  uint16_t answer;  // the learner's answer
};
std::vector<uint32_t> digest_keys(size_t n, uint64_t seed);

template <class Learner, class Expected, class Fold>
std::optional<WrongFloat> first_wrong_float(Grader& g, int64_t stride, Learner learner, Expected expected,
                                            Fold fold) {
  constexpr uint64_t kBlock = uint64_t(1) << 16, kBlocks = (uint64_t(1) << 32) / kBlock;
  const uint64_t offset = stride > 1 ? g.seed_for(0x5eed) % uint64_t(stride) : 0;
  const size_t n = size_t((kBlocks - offset + uint64_t(stride) - 1) / uint64_t(stride));
  const std::vector<uint32_t> keys = digest_keys(kBlock, g.seed_for(0xd16e57));
  auto block_start = [&](size_t k) { return (uint64_t(k) * uint64_t(stride) + offset) * kBlock; };
  auto fill_inputs = [](uint64_t base, float* in) {
    for (uint64_t i = 0; i < kBlock; ++i) {
      const uint32_t u = uint32_t(base + i);
      std::memcpy(&in[i], &u, 4);
    }
  };
  auto digest = [&](const float* in, const uint16_t* answers) {
    uint32_t h = 0;
    for (uint64_t i = 0; i < kBlock; ++i) h += keys[i] * uint32_t(fold(in[i], answers[i]));
    return h;
  };
  auto theirs = g.start([&] {
    std::vector<uint32_t> d(n);
#pragma omp parallel
    {
      std::vector<float> in(kBlock);
      std::vector<uint16_t> answers(kBlock);
#pragma omp for schedule(static)
      for (int64_t k = 0; k < int64_t(n); ++k) {
        fill_inputs(block_start(size_t(k)), in.data());
        for (uint64_t i = 0; i < kBlock; ++i) answers[i] = learner(in[i]);
        d[size_t(k)] = digest(in.data(), answers.data());
      }
    }
    return d;
  });
  std::vector<uint32_t> ours(n);
#pragma omp parallel
  {
    std::vector<float> in(kBlock);
    std::vector<uint16_t> want(kBlock);
#pragma omp for schedule(static)
    for (int64_t k = 0; k < int64_t(n); ++k) {
      fill_inputs(block_start(size_t(k)), in.data());
      expected(in.data(), want.data(), size_t(kBlock));
      ours[size_t(k)] = digest(in.data(), want.data());
    }
  }
  const std::vector<uint32_t> got = sized(theirs.get(), n);
  for (size_t k = 0; k < n; ++k) {
    if (got[k] == ours[k]) continue;
    std::vector<float> in(kBlock);
    std::vector<uint16_t> want(kBlock);
    fill_inputs(block_start(k), in.data());
    const std::vector<uint16_t> answers = sized(g.run([&] {
      std::vector<uint16_t> a(kBlock);
      for (uint64_t i = 0; i < kBlock; ++i) a[i] = learner(in[i]);
      return a;
    }), kBlock);
    expected(in.data(), want.data(), size_t(kBlock));
    for (uint64_t i = 0; i < kBlock; ++i)
      if (fold(in[i], answers[i]) != fold(in[i], want[i])) return WrongFloat{uint32_t(block_start(k) + i), answers[i]};
    throw Failed("your answers for the floats from " + std::to_string(block_start(k)) + " on (as bits) differed "
                 "from one run to the next: a conversion must depend on its input alone");
  }
  return std::nullopt;
}

// The first wrong answer among the parts of one check ("" when every part is right), each
// part run only when those before it were right: the hand-picked inputs, whose explanations
// are the clearest, then the inputs drawn from the seed.
std::string first_wrong(std::initializer_list<std::function<std::string()>> parts);

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
