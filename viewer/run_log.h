#pragma once
// The viewer's reader of a run folder (docs/run-log.md): runs/<name>/run.json + events.jsonl.
//
// The viewer never links framework/io: it reads only the files, so it can show a run that is
// still being written by another process, or one finished years ago.
//
// Reading is incremental. A RunReader remembers the byte offset up to which events.jsonl has
// been consumed; poll() reads only what was appended since. What it does with odd input (the
// documented behaviour, tested in tests/viewer/test_run_log.cpp):
//   - a last line with no '\n' yet (the writer is mid-line): kept pending and re-read on the
//     next poll, once more bytes arrive. If the pending text already is a whole JSON object it
//     is taken (a writer may end the file without a newline).
//   - a line that is not JSON, not an object, or lacks a field its type needs: counted in
//     `corrupt_lines` (the first few are kept in `problems` with their line numbers), skipped.
//   - a line whose "type" is not one of scalar/loss_scale/grad_hist/note/end: counted in
//     `unknown_types`, skipped.
//   - empty lines: ignored.
//   - an empty or missing events.jsonl: a run with no events (not an error).
//   - a folder with no run.json: still a run (named after the folder); `run_json_error` says
//     "no run.json in DIR" and its events are read as usual.
//   - a run.json that is not valid JSON: `run_json_error` holds the parser's message.
//   - events.jsonl got shorter than what was read (rewritten from scratch): read again from 0.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hg::viewer {

struct ScalarPoint {
  int64_t step;
  double value;
};

struct LossScalePoint {
  int64_t step;
  double scale;
  bool found_inf, skipped;
};

// One parameter's gradient histogram at one step (the `grad_hist` event, see docs/run-log.md).
// counts[i] counts finite non-zero |g| with floor(log2|g|) == exp_min + i, for the gradient as
// the backward pass produced it, i.e. multiplied by `scale`.
struct GradHist {
  int64_t step = 0;
  double scale = 1.0;
  int exp_min = -40, exp_max = 16;
  std::vector<int64_t> counts;  // (exp_max - exp_min + 1)
  int64_t below = 0, above = 0, zeros = 0;
  int64_t fp16_underflow = 0, fp16_subnormal = 0, fp16_overflow = 0;
  int64_t inf = 0, nan = 0, total = 0;
  double lost_update_fraction = -1.0;  // -1: not logged
};

struct Note {
  int64_t step;
  std::string text;
};

// Everything read from one run folder so far.
struct RunData {
  std::string dir;   // the folder
  std::string name;  // run.json "name", else the folder's name
  nlohmann::json run_json;     // null when missing or unreadable
  std::string run_json_error;  // empty when run.json was read
  bool synthetic = false;      // run.json "synthetic": true (demo data, not a training run)

  std::map<std::string, std::vector<ScalarPoint>> scalars;  // by name, in file order
  std::vector<LossScalePoint> loss_scale;
  std::vector<std::string> params;                  // parameter names in order of appearance
  std::map<std::string, std::vector<GradHist>> grads;  // by parameter, in file order
  std::vector<Note> notes;
  std::string end_status;  // "" while running; "finished" / "failed" after the end event
  int64_t max_step = -1;

  // Bookkeeping the Runs panel shows.
  int64_t lines = 0;          // complete lines consumed (including bad ones)
  int64_t events = 0;         // lines that became an event
  int64_t corrupt_lines = 0;  // not JSON / not an object / a field missing or of the wrong type
  int64_t unknown_types = 0;  // valid JSON whose "type" this reader does not know
  std::vector<std::string> problems;  // the first few bad lines, "line 12: ..." (kept short)
  int64_t pending_bytes = 0;  // an incomplete last line waiting for its end
  int64_t restarts = 0;       // times events.jsonl shrank and was read again from the start
};

class RunReader {
 public:
  explicit RunReader(std::string dir);

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
  void consume_line(const char* begin, const char* end);
  void reset_events();

  RunData data_;
  int64_t offset_ = 0;     // bytes of events.jsonl consumed (complete lines only)
  int64_t file_size_ = 0;  // size seen at the last poll
  std::string pending_;    // bytes after the last '\n'
  bool caught_up_ = false;
  uint64_t version_ = 0;
  int64_t run_json_mtime_ = -1;
};

// Parses one line into `data` (exposed for tests). Returns false when the line is corrupt;
// `why` then says what is wrong. An unknown type returns true and counts in unknown_types.
bool parse_event_line(const std::string& line, RunData& data, std::string* why);

// Folders under `root` that look like runs (have run.json or events.jsonl), sorted by name.
// `root` itself is returned when it is a run folder.
std::vector<std::string> list_run_dirs(const std::string& root);
bool is_run_dir(const std::string& dir);

}  // namespace hg::viewer
