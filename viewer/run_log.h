#pragma once
// The viewer's reader of a run folder (docs/run-log.md): runs/<name>/run.json + events.jsonl.
//
// The viewer never links framework/io's reader: it reads only the files, so it can show a run
// that is still being written by another process, or one finished years ago.
//
// A run log is data from outside: a crashed run, a disk that filled, a hand-edited file. So
// between parsing a line and drawing it there is ONE validation step (the `Fields` checks in
// run_log.cpp): every field of every event type is checked for its type, finiteness and
// range (the limits below), and a line that fails is counted as corrupt with the reason and
// never stored. Everything a panel draws has passed it; the panels trust these ranges.
//
// Reading is incremental and streamed. A RunReader remembers the byte offset up to which
// events.jsonl has been consumed; poll() reads only what was appended since, 1 MiB at a time,
// and never holds more than one line (at most kMaxLineBytes) besides the events it keeps.
// What it does with odd input (docs/viewer.md, "Bad input"; tests/viewer/test_run_log.cpp):
//   - a last line with no '\n' yet (the writer is mid-line): kept pending and re-read on the
//     next poll, once more bytes arrive. If the pending text already is a whole JSON object it
//     is taken (a writer may end the file without a newline).
//   - a line that is not JSON, not an object, lacks a field its type needs, or has a field of
//     the wrong type or out of range: counted in `corrupt_lines` (the first few are kept in
//     `problems` as "line 17: why"), skipped.
//   - a line longer than kMaxLineBytes: counted as corrupt when it passes the limit, and the
//     rest of it skipped up to its '\n' without being held.
//   - a line whose "type" is not one of scalar/loss_scale/grad_hist/memory/fp8_scale/note/
//     command/end:
//     counted in `unknown_types`, skipped.
//   - a step that is not after the last one of its series (a run resumed from an earlier
//     checkpoint logs those steps again; a repeated line): the newer line wins, the points
//     from that step on are replaced (counted in `replaced_points`). Series stay sorted.
//   - empty lines: ignored. CRLF line ends, a UTF-8 byte-order mark at the start: accepted.
//   - an empty or missing events.jsonl: a run with no events (not an error); one that is not
//     a regular file or cannot be opened: `events_error` says why.
//   - a folder with no run.json: still a run (named after the folder); `run_json_error` says
//     "no run.json in DIR" and its events are read as usual.
//   - a run.json that is not valid JSON, not an object (an array, a number, a string), not a
//     regular file (a pipe would block), larger than kMaxRunJsonBytes or nested deeper than
//     kMaxRunJsonDepth: `run_json_error` says which; run_json stays null.
//   - events.jsonl got shorter than what was read (rewritten from scratch): read again from 0.
//   - the events kept reach the memory cap: reading stops there (`stopped_at_line`). The cap is
//     kMaxHeldBytes, or less: the runs a viewer follows share one budget (viewer/run_set.h),
//     which lowers a run's cap to its share and raises it again when there is room.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/dtype/float_format.h"  // kE4M3, kE5M2: the formats of an fp8_scale event
#include "framework/memory/accountant.h"      // the categories of a memory event

namespace hg::viewer {

// ---- what the reader accepts ------------------------------------------------------------
// A value outside these makes its line corrupt (docs/viewer.md, "Bad input").
namespace limits {
// Steps: whole numbers 0 .. 2^40 (10^12: a million steps a second for twelve days). Far
// below 2^53, where doubles stop telling a step from the next one, so a step axis advances.
inline constexpr int64_t kMaxStep = int64_t(1) << 40;
// Counts: whole numbers 0 .. 2^48 (a tensor of 2.8·10^14 values, a petabyte in FP32). The
// sum of every bin of a histogram then stays far below 2^63.
inline constexpr int64_t kMaxCount = int64_t(1) << 48;
// Names (scalar, parameter, run, end status): 1..200 bytes, no control characters.
inline constexpr size_t kMaxNameBytes = 200;
inline constexpr size_t kMaxNoteBytes = 4096;   // the text of a note
inline constexpr size_t kMaxParams = 4096;      // parameters with histograms, per run
inline constexpr size_t kMaxScalarNames = 1024; // scalar names, per run
inline constexpr size_t kMaxFp8Tensors = 4096;  // FP8 tensors with fp8_scale events, per run
// Bytes in a memory event: whole numbers 0 .. 2^50 (a pebibyte, far beyond any one device).
// Five categories then sum to far below 2^53, where doubles stop being exact.
inline constexpr int64_t kMaxBytes = int64_t(1) << 50;
// Files. A grad_hist line is about half a kilobyte; a line longer than 1 MiB is damage.
inline constexpr int64_t kMaxLineBytes = int64_t(1) << 20;
inline constexpr int64_t kMaxRunJsonBytes = int64_t(1) << 20;
inline constexpr int kMaxRunJsonDepth = 32;
// The events one run keeps in memory (an estimate of their structs and arrays; vectors may
// reserve up to twice it). A run that reaches it stops being read, and the panels say so.
inline constexpr int64_t kMaxHeldBytes = int64_t(256) << 20;
// The events all the runs a viewer follows keep together, by default (--memory-budget;
// viewer/run_set.h): four runs at the cap above. The reader allocates about 1.4 times its
// estimate (measured on the demo runs and chapter 12's), well under the 4 GB of address space
// a small machine or a ulimit may give.
inline constexpr int64_t kDefaultBudgetBytes = int64_t(1) << 30;
}  // namespace limits

// Binary exponents a histogram may span, and the range of a loss scale: those of the formats
// in framework/dtype (all_formats(): FP32's 2^-149 .. 2^127 and 3.4e38), never typed in here.
int min_hist_exponent();
int max_hist_exponent();
double min_loss_scale();
double max_loss_scale();

struct ScalarPoint {
  int64_t step;
  double value;  // any double; NaN and ±inf (logged as "nan"/"inf" or null) are not drawn
};

struct LossScalePoint {
  int64_t step;
  double scale;  // finite in [min_loss_scale(), max_loss_scale()], or +inf / NaN (not drawn)
  bool found_inf, skipped;
};

// The format a histogram's values were held in when they were counted (the grad_hist field
// "dtype": "f32", "f16", "bf16", "f64"). Unknown: a log written before the field existed.
// It decides what the Gradients panel may say: an F16 value never lies below 2^-24 (what
// underflowed is already 0, among the zeros), while BF16 and F32 keep such values.
enum class GradDtype { Unknown, F32, F16, BF16, F64 };
const char* grad_dtype_name(GradDtype d);  // as in the log; "" for Unknown

// One parameter's gradient histogram at one step (the `grad_hist` event, see docs/run-log.md).
// counts[i] counts finite non-zero |g| with floor(log2|g|) == exp_min + i, for the gradient as
// the backward pass produced it, i.e. multiplied by `scale`. Validated: exp_min..exp_max
// within min/max_hist_exponent(), every count in 0..kMaxCount, counts + below + above + zeros
// + inf + nan == total, scale finite in [min_loss_scale(), max_loss_scale()], and an F16
// histogram with no fp16_underflow or fp16_overflow (F16 holds no such finite value).
struct GradHist {
  int64_t step = 0;
  double scale = 1.0;
  int exp_min = -40, exp_max = 16;
  std::vector<int64_t> counts;  // (exp_max - exp_min + 1)
  int64_t below = 0, above = 0, zeros = 0;
  int64_t fp16_underflow = 0, fp16_subnormal = 0, fp16_overflow = 0;
  int64_t inf = 0, nan = 0, total = 0;
  double lost_update_fraction = -1.0;  // in [0, 1]; -1: not logged
  GradDtype dtype = GradDtype::Unknown;
};

// Where the memory went at one step's peak (the `memory` event, docs/run-log.md), on one
// device. Validated: every byte count whole in 0..kMaxBytes, peak == the sum of the five.
// The categories are the accountant's tags (framework/memory/accountant.h), in its order,
// named by memory::tag_name: "parameters", "gradients", "optimizer_state", "activations",
// "temporaries". The Memory panel stacks them in this order, bottom up.
struct MemoryPoint {
  static constexpr int kCategories = memory::kTags;
  static const char* name(int i) { return memory::tag_name(memory::kAllTags[i]); }
  int64_t step = 0;
  int64_t bytes[kCategories] = {};
  int64_t peak = 0;  // the sum of bytes[]
  int64_t live = 0;  // held when the event was written (after the step)
};

// One FP8 cast of one tensor at one step (the `fp8_scale` event of chapter 14, docs/run-log.md).
// Validated: amax and history_amax >= 0, or +inf / NaN (a tensor that overflowed: the writer
// logs what it saw); scale and scale_max >= 0, or +inf / NaN (fp8_max / amax of a subnormal
// amax is inf in F32), scale_max >= scale when both are finite; underflow a fraction 0 .. 1;
// saturated a count 0 .. kMaxCount. The panel draws only finite positive values on its log axes.
struct Fp8ScalePoint {
  int64_t step = 0;
  double amax = 0;          // the largest |value| of the tensor at this step
  double scale = 1;         // the multiplier it was cast with (tiled recipes: the smallest tile's)
  double scale_max = 1;     // tiled recipes: the largest tile scale; = scale per tensor
  double history_amax = 0;  // delayed scaling: the max over the amax history after this step
  double underflow = 0;     // the fraction of finite non-zero values that became 0 in FP8
  int64_t saturated = 0;    // values above the format's max after scaling (clamped)
};

// One FP8 tensor's casts, by step. Its format is that of its first line ("E4M3" is kE4M3,
// "E5M2" kE5M2, framework/dtype): a later line of the same tensor with the other format is
// corrupt, unless it replaces every point there is (a run logged again from its start).
struct Fp8Series {
  const FloatFormat* format = nullptr;  // &kE4M3 or &kE5M2
  std::vector<Fp8ScalePoint> points;
};
// "E4M3" -> &kE4M3, "E5M2" -> &kE5M2 (the names framework/fp8 writes), anything else nullptr;
// and back ("?" for another format).
const FloatFormat* fp8_format(const std::string& name);
const char* fp8_format_name(const FloatFormat* f);

struct Note {
  int64_t step;
  std::string text;
};

// A command of a live run's control channel, applied or refused (the `command` event,
// docs/run-log.md, "The control channel"). Validated: `applied` a boolean, `source` a name,
// the command an object (kept as one line of JSON, at most kMaxNoteBytes) or, for a line that
// was no command, its `text`; a refusal's `reason` a text.
struct CommandEvent {
  int64_t step = 0;
  bool applied = false;
  std::string source;   // "script", "control.jsonl line 3"
  nlohmann::json command;  // the command object; null for a line that was none
  std::string text;     // that line, as the program read it
  std::string reason;   // why it was refused
};

// Everything read from one run folder so far.
struct RunData {
  std::string dir;   // the folder
  std::string name;  // run.json "name", else the folder's name
  nlohmann::json run_json;     // an object, or null when missing or unreadable
  std::string run_json_error;  // empty when run.json was read and is fine
  bool run_json_missing = false;  // no run.json at all: a normal state, not a problem
  bool synthetic = false;      // run.json "synthetic": true (demo data, not a training run)

  // Each series is sorted by step, one point per step.
  std::map<std::string, std::vector<ScalarPoint>> scalars;  // by name
  std::vector<LossScalePoint> loss_scale;
  std::vector<std::string> params;                  // parameter names in order of appearance
  std::map<std::string, std::vector<GradHist>> grads;  // by parameter
  std::map<std::string, std::vector<MemoryPoint>> memory;  // by device: "cpu", "cuda"
  std::vector<std::string> fp8_tensors;             // FP8 tensors in order of appearance
  std::map<std::string, Fp8Series> fp8;             // by tensor: "fc1.x", "fc1.w", "fc1.dy"
  std::vector<Note> notes;                          // in file order
  std::vector<CommandEvent> commands;               // in file order (a live run's)
  std::string end_status;  // "" while running; "finished" / "failed" after the end event
  int64_t max_step = -1;

  // Bookkeeping the panels show.
  int64_t lines = 0;          // complete lines consumed (including bad ones, not blank ones)
  int64_t events = 0;         // lines that became an event
  int64_t corrupt_lines = 0;  // lines refused by the validation step
  int64_t unknown_types = 0;  // valid JSON whose "type" this reader does not know
  int64_t replaced_points = 0;  // points replaced by a later line for the same or an earlier step
  std::vector<std::string> problems;  // the first few bad lines, "line 12: ..." (kept short)
  int64_t pending_bytes = 0;  // an incomplete last line waiting for its end
  int64_t restarts = 0;       // times events.jsonl shrank and was read again from the start
  std::string events_error;   // events.jsonl exists but cannot be read (not a file, no access)
  int64_t held_bytes = 0;     // estimate of the memory the events above and run.json take
  int64_t stopped_at_line = 0;  // > 0: reading stopped before this line (memory cap reached)
  bool stopped_at_share = false;  // it stopped at its share of a budget across runs, not at
  int64_t stopped_share = 0;      // the cap per run; the share, in bytes
};

// The run's problems, one short sentence each, for the panels and the headless output:
// corrupt lines (with the first reason), an unreadable run.json or events.jsonl, a stop at the
// memory cap, and with `incomplete` also an incomplete last line. Empty when all is well.
std::vector<std::string> run_problems(const RunData& run, bool incomplete = false);

class RunReader {
 public:
  // memory_cap: bytes of events to keep at most (tests pass a small one).
  explicit RunReader(std::string dir, int64_t memory_cap = limits::kMaxHeldBytes);

  // The run's share of a budget across runs (viewer/run_set.h): the cap becomes the smaller of
  // it and memory_cap. A run stopped at its share reads on from where it stopped once the share
  // is above what it holds.
  void set_budget_share(int64_t bytes);
  // Forgets everything read (events and run.json), as if never polled: the next poll reads the
  // folder from the start. version() still moves on, so no cache takes the new data for the old.
  void unload();
  // True once poll() was called (and not unloaded since).
  bool polled() const { return polled_; }

  // Reads run.json (again) and whatever was appended to events.jsonl since the last call, at
  // most max_bytes of it (so a huge file loads over several frames without freezing the UI).
  // Returns true when something changed.
  bool poll(int64_t max_bytes = INT64_MAX);

  // True when the last poll reached the end of the file (nothing left to read right now).
  bool caught_up() const { return caught_up_; }
  int64_t offset() const { return offset_; }
  int64_t file_size() const { return file_size_; }

  const RunData& data() const { return data_; }
  // Bumped on every change: panels cache derived pictures and rebuild when it moves.
  uint64_t version() const { return version_; }

 private:
  void read_run_json();
  void feed(const char* begin, const char* end);  // bytes of events.jsonl, in file order
  void consume_line(const char* begin, const char* end);
  void line_too_long();
  void reset_events();

  RunData data_;
  int64_t run_cap_;     // the cap per run (the constructor's memory_cap)
  int64_t memory_cap_;  // what reading stops at: run_cap_, or a smaller share of a budget
  int64_t offset_ = 0;     // bytes of events.jsonl consumed (complete lines only)
  int64_t read_pos_ = 0;   // bytes of events.jsonl read (offset_ + the line in progress)
  int64_t file_size_ = 0;  // size seen at the last poll
  int64_t line_no_ = 0;    // '\n'-ended lines seen, blank ones included: numbers problems
  std::string pending_;    // bytes after the last '\n' (at most kMaxLineBytes)
  bool skipping_ = false;  // inside a line longer than kMaxLineBytes: drop bytes until '\n'
  bool caught_up_ = false;
  bool polled_ = false;
  uint64_t version_ = 0;
  int64_t run_json_mtime_ = -1;
  int64_t run_json_held_ = 0;  // the part of held_bytes that is run.json
};

// Parses and validates one line into `data` (exposed for tests). Returns false when the line
// is corrupt; `why` then says what is wrong. An unknown type returns true and counts in
// unknown_types.
bool parse_event_line(const std::string& line, RunData& data, std::string* why);

// The name of a run folder: its own name, or "<job>/rank<k>" for one rank of a data-parallel
// run (chapter 13's runs/<job>/rank<k>: "rank1" alone would not say which run). A RunReader
// is named so until its run.json names it.
std::string run_folder_name(const std::string& dir);

// Folders under `root` that look like runs (have run.json or events.jsonl), sorted by name,
// numbers in names as numbers (rank2 before rank10).
// `root` itself is returned when it is a run folder. A folder under `root` that is not a run
// but holds runs — chapter 13's runs/<name>/rank0, rank1, ... — gives those (one level down).
std::vector<std::string> list_run_dirs(const std::string& root);
bool is_run_dir(const std::string& dir);

}  // namespace hg::viewer
