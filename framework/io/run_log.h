#pragma once
// The run log the viewer reads: runs/<name>/run.json and runs/<name>/events.jsonl.
// The schema is docs/run-log.md; this file is its only writer.
//
//   hg::io::RunLog log("runs/02_mlp_fp32", {{"lesson", "02_fp32_training"}, {"model", "mlp"},
//                                           {"precision", "fp32"}, {"device", "cpu"},
//                                           {"seed", 0}, {"args", {{"epochs", 5}}}});
//   log.scalar(step, "train/loss", loss, epoch);
//   log.end("finished");
//
// run.json is written atomically at the start (status "running") and rewritten at end().
// Each event is one line of events.jsonl, written with a single write() straight to the
// file (nothing is buffered), so a reader sees whole lines (and at worst a half-written last
// one while a run is going). JSON has no NaN or infinity: a non-finite number, in any field
// of any event, is written as the string "nan", "inf" or "-inf"; event_number() reads
// either form back.
//
// When writing fails:
//   - at the start (the folder, run.json or events.jsonl cannot be made): the constructor
//     throws, before the first training step;
//   - an event (a full disk, a quota): a warning on stderr, once; the run goes on; the lost
//     events are counted and end() records the count in run.json ("events_dropped"). A
//     partial line is cut off again (ftruncate), or, where that fails, the next event starts
//     with a newline, so that it stays one corrupt line instead of swallowing that event;
//   - run.json at end(): a warning on stderr; the previous run.json stays whole (atomic).
// Resuming (append = true) a log that a crash left ending mid-line first ends that line, so
// the resumed events start on a fresh line and the broken one is counted as corrupt.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hg::io {

// The two files of a run folder. No other file may take these names there (a checkpoint
// saved as events.jsonl would replace the log: framework/train/cli.h refuses it).
inline constexpr const char* kRunJson = "run.json";
inline constexpr const char* kEventsJsonl = "events.jsonl";

class RunLog {
 public:
  // `dir` is the run folder (created with its parents). `run` holds the run.json fields the
  // program knows (lesson, model, precision, device, seed, args, ...); RunLog adds
  // "format", "version", "name" (the folder's last part), "started" (UTC, ISO 8601),
  // "status": "running" and "halfgrad" (the version line) where they are missing.
  // append = false starts events.jsonl afresh; true continues it (resuming a run).
  RunLog(const std::string& dir, nlohmann::json run, bool append = false);
  // If end() was never called: while an exception unwinds the stack → end("failed"),
  // otherwise → end("finished"). Never throws.
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  void scalar(int64_t step, std::string_view name, double value, std::optional<int64_t> epoch = {});
  void loss_scale(int64_t step, double scale, bool found_inf, bool skipped);
  // `hist` carries the fields of docs/run-log.md (param, scale, exp_min, exp_max, counts,
  // below, above, zeros, fp16_underflow, fp16_subnormal, fp16_overflow, inf, nan, total,
  // optional lost_update_fraction), already computed (framework/amp computes them). Throws
  // std::invalid_argument naming a missing required field or a counts array whose length is
  // not exp_max − exp_min + 1.
  void grad_hist(int64_t step, const nlohmann::json& hist);
  // `fields` carries the memory event of docs/run-log.md: "device" ("cpu" or "cuda"), the
  // bytes of each category at the peak ("parameters", "gradients", "optimizer_state",
  // "activations", "temporaries"), "peak" (their sum) and "live" (bytes held when written);
  // framework/memory/report.h fills them from the accountant. Throws std::invalid_argument
  // naming a missing or negative field, or a peak that is not the sum.
  void memory(int64_t step, const nlohmann::json& fields);
  void note(int64_t step, std::string_view text);
  void note(std::string_view text) { note(last_step_, text); }
  // Writes the end event (at the last step seen) and rewrites run.json with the status.
  void end(std::string_view status = "finished");

  // Any event; `type` and `step` are set here. The typed helpers above all come through it.
  void event(std::string_view type, int64_t step, nlohmann::json fields = nlohmann::json::object());

  const std::string& dir() const { return dir_; }
  const nlohmann::json& run() const { return run_; }
  int64_t last_step() const { return last_step_; }

 private:
  void write_run_json();

  std::string dir_, events_path_;
  nlohmann::json run_;
  int events_ = -1;               // events.jsonl, opened for appending
  int64_t dropped_events_ = 0;    // events whose write failed
  bool mend_line_ = false;        // a failed write left a partial line: start the next one fresh
  int64_t last_step_ = 0;
  bool ended_ = false;
  int uncaught_at_start_ = 0;
};

// Current UTC time as "2026-11-29T09:30:00Z".
std::string utc_timestamp();

// A number written by RunLog: a JSON number, or "nan"/"inf"/"-inf". Throws on anything else.
double event_number(const nlohmann::json& v);

// ---- reading ------------------------------------------------------------------------------

// A line longer than this is corrupt whatever it holds (the longest real event, a gradient
// histogram, is under 1 KB); it is skipped without being stored.
inline constexpr size_t kMaxEventLineBytes = size_t(1) << 20;

struct EventLog {
  std::vector<nlohmann::json> events;   // every line that parsed as a JSON object with a "type"
  int64_t corrupt_lines = 0;            // complete lines (ended by a newline) that are not an
                                        // event, and lines longer than kMaxEventLineBytes
  bool partial_last_line = false;       // the file ends without a newline in a line that is not an event
  int64_t unknown_types = 0;            // events whose type docs/run-log.md does not define (kept)
};

// Reads events.jsonl a chunk at a time (memory: the events and one line, never the whole
// file). Tolerant by design: a run still being written may end mid-line, and a damaged line
// is counted, not fatal. A broken line followed by more lines is corrupt, not partial: only
// the very last line can still be in the middle of being written. Throws only when the file
// cannot be opened or is not a regular file.
EventLog read_events(const std::string& path);

// Reads run.json; throws naming the file when it is missing or not a JSON object.
nlohmann::json read_run_json(const std::string& path);

}  // namespace hg::io
