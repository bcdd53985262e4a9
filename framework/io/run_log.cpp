#include "framework/io/run_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <stdexcept>

#include "datasets/bytes.h"
#include "framework/io/atomic_file.h"
#include "framework/version.h"

namespace hg::io {

using nlohmann::json;

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// JSON cannot hold NaN or ±inf (nlohmann would silently write null): keep them as strings.
static json number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// The same for every number anywhere in an event, so no field of any event can hold null
// where a number was meant.
static void strings_for_non_finite(json& j) {
  if (j.is_number_float()) {
    if (!std::isfinite(j.get<double>())) j = number(j.get<double>());
  } else if (j.is_structured()) {
    for (auto& v : j) strings_for_non_finite(v);
  }
}

// write() until all of it is written; false (errno set) when the system refuses.
static bool write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t k = ::write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (k == 0) errno = ENOSPC;
      return false;
    }
    p += k;
    n -= size_t(k);
  }
  return true;
}

double event_number(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  throw std::runtime_error(fmt::format("run log: expected a number, got {}", v.dump()));
}

static std::string last_path_part(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const auto slash = dir.rfind('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

RunLog::RunLog(const std::string& dir, json run, bool append)
    : dir_(dir), run_(std::move(run)), uncaught_at_start_(std::uncaught_exceptions()) {
  if (!run_.is_object()) throw std::invalid_argument("RunLog: run.json fields must be a JSON object");
  make_dirs(dir_);
  // Fill what the program did not say; its own values win (emplace does not overwrite).
  run_.emplace("format", "halfgrad-run");
  run_.emplace("version", 1);
  run_.emplace("name", last_path_part(dir_));
  run_.emplace("started", utc_timestamp());
  run_.emplace("halfgrad", build_summary());
  run_["status"] = "running";
  write_run_json();

  events_path_ = dir_ + "/" + kEventsJsonl;
  events_ = ::open(events_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (events_ < 0)
    throw std::runtime_error(fmt::format("cannot open {} for writing: {}", events_path_, std::strerror(errno)));
  // A run that died mid-line (a full disk, a kill) left a half line. Appending to it would
  // glue the first new event onto it and lose both: end it first, so the half line stays a
  // line of its own that readers count as corrupt.
  struct stat st;
  char last = '\n';
  if (append && ::fstat(events_, &st) == 0 && st.st_size > 0 && ::pread(events_, &last, 1, st.st_size - 1) != 1)
    last = '\n';  // unreadable: nothing to mend
  if (last != '\n' && !write_all(events_, "\n", 1)) {
    const int err = errno;
    ::close(events_);
    events_ = -1;
    throw std::runtime_error(fmt::format("cannot append to {}: {}", events_path_, std::strerror(err)));
  }
}

RunLog::~RunLog() {
  try {
    if (!ended_) end(std::uncaught_exceptions() > uncaught_at_start_ ? "failed" : "finished");
  } catch (...) {
    // A destructor must not throw; the events already written stay valid.
  }
  if (events_ >= 0) ::close(events_);  // every line went out with write(): nothing is buffered
}

void RunLog::write_run_json() {
  json run = run_;
  strings_for_non_finite(run);  // an argument such as --lr nan is shown as "nan", not null
  write_file_atomic(dir_ + "/" + kRunJson, run.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

void RunLog::event(std::string_view type, int64_t step, json fields) {
  if (events_ < 0) throw std::logic_error("RunLog: event after the log was closed");
  if (!fields.is_object()) throw std::invalid_argument("RunLog::event: fields must be a JSON object");
  json e = json::object();
  e["type"] = type;
  e["step"] = step;
  for (auto& [k, v] : fields.items()) e[k] = std::move(v);
  strings_for_non_finite(e);
  last_step_ = std::max(last_step_, step);
  // One write() of a whole line: a reader never sees a line split by us. (Bytes that are
  // not UTF-8, in a note or a name, become U+FFFD rather than an exception.)
  const std::string line = std::string(mend_line_ ? "\n" : "") +
                           e.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  const off_t before = ::lseek(events_, 0, SEEK_END);
  if (write_all(events_, line.data(), line.size())) {
    mend_line_ = false;
    return;
  }

  // The write failed (a full disk, a quota): the run goes on without this event. Say so once,
  // count what is lost (end() records it in run.json), and take back a partial line; where
  // that fails too, the next event starts with a newline, so the half line stays one
  // corrupt line instead of swallowing that event.
  const int err = errno;
  if (dropped_events_++ == 0)
    std::fprintf(stderr, "warning: cannot append to %s: %s; training goes on, but events are "
                 "missing from the log from step %lld on\n", events_path_.c_str(), std::strerror(err),
                 (long long)step);
  if (before < 0 || ::ftruncate(events_, before) != 0) mend_line_ = true;
}

void RunLog::scalar(int64_t step, std::string_view name, double value, std::optional<int64_t> epoch) {
  json f = {{"name", name}, {"value", number(value)}};
  if (epoch) f["epoch"] = *epoch;
  event("scalar", step, std::move(f));
}

void RunLog::loss_scale(int64_t step, double scale, bool found_inf, bool skipped) {
  event("loss_scale", step, {{"scale", number(scale)}, {"found_inf", found_inf}, {"skipped", skipped}});
}

void RunLog::grad_hist(int64_t step, const json& hist) {
  if (!hist.is_object()) throw std::invalid_argument("RunLog::grad_hist: expects a JSON object");
  for (const char* key : {"param", "scale", "exp_min", "exp_max", "counts", "below", "above", "zeros",
                          "fp16_underflow", "fp16_subnormal", "fp16_overflow", "inf", "nan", "total"})
    if (!hist.contains(key))
      throw std::invalid_argument(fmt::format("RunLog::grad_hist: field '{}' is missing", key));
  const json& counts = hist["counts"];
  if (!counts.is_array() || !hist["exp_min"].is_number_integer() || !hist["exp_max"].is_number_integer())
    throw std::invalid_argument("RunLog::grad_hist: counts must be an array, exp_min/exp_max integers");
  const int64_t bins = hist["exp_max"].get<int64_t>() - hist["exp_min"].get<int64_t>() + 1;
  if (int64_t(counts.size()) != bins)
    throw std::invalid_argument(fmt::format("RunLog::grad_hist: {} counts for exponents {}..{} ({} bins)",
                                            counts.size(), hist["exp_min"].get<int64_t>(),
                                            hist["exp_max"].get<int64_t>(), bins));
  json f = hist;
  if (f["scale"].is_number()) f["scale"] = number(f["scale"].get<double>());
  if (f.contains("lost_update_fraction") && f["lost_update_fraction"].is_number())
    f["lost_update_fraction"] = number(f["lost_update_fraction"].get<double>());
  event("grad_hist", step, std::move(f));
}

void RunLog::memory(int64_t step, const json& fields) {
  if (!fields.is_object()) throw std::invalid_argument("RunLog::memory: expects a JSON object");
  if (!fields.contains("device") || !fields["device"].is_string())
    throw std::invalid_argument("RunLog::memory: field 'device' is missing or not a string");
  int64_t sum = 0;
  for (const char* key : {"parameters", "gradients", "optimizer_state", "activations", "temporaries",
                          "peak", "live"}) {
    if (!fields.contains(key) || !fields[key].is_number_integer() || fields[key].get<int64_t>() < 0)
      throw std::invalid_argument(fmt::format("RunLog::memory: field '{}' must be bytes (an integer >= 0)", key));
    if (std::string_view(key) != "peak" && std::string_view(key) != "live") sum += fields[key].get<int64_t>();
  }
  if (fields["peak"].get<int64_t>() != sum)
    throw std::invalid_argument(fmt::format("RunLog::memory: peak {} is not the sum of the categories ({})",
                                            fields["peak"].get<int64_t>(), sum));
  event("memory", step, fields);
}

void RunLog::note(int64_t step, std::string_view text) { event("note", step, {{"text", text}}); }

void RunLog::end(std::string_view status) {
  if (ended_) return;
  event("end", last_step_, {{"status", status}});
  ended_ = true;
  run_["status"] = status;
  run_["ended"] = utc_timestamp();
  if (dropped_events_ > 0) run_["events_dropped"] = dropped_events_;
  try {
    write_run_json();
  } catch (const std::runtime_error& e) {
    // The run itself is done: a log that cannot be finished is reported, not fatal.
    // (Atomic: run.json still holds the previous, complete version.)
    std::fprintf(stderr, "warning: %s\n", e.what());
  }
}

// ---- reading ------------------------------------------------------------------------------

// One line of events.jsonl into `log`.
static void add_line(EventLog& log, const std::string& line, bool last_unterminated, bool too_long) {
  if (!too_long && line.find_first_not_of(" \t\r") == std::string::npos) return;  // blank line
  json e = too_long ? json(json::value_t::discarded) : json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (e.is_discarded() || !e.is_object() || !e.contains("type") || !e["type"].is_string()) {
    if (last_unterminated) log.partial_last_line = true;  // a run still being written
    else ++log.corrupt_lines;
    return;
  }
  const std::string& type = e["type"].get_ref<const std::string&>();
  if (type != "scalar" && type != "loss_scale" && type != "grad_hist" && type != "fp8_scale" &&
      type != "memory" && type != "note" && type != "end")
    ++log.unknown_types;
  log.events.push_back(std::move(e));
}

EventLog read_events(const std::string& path) {
  data::FileReader in(path);  // a folder or a FIFO is refused, naming it
  EventLog log;
  std::string line;
  bool too_long = false;
  std::vector<uint8_t> chunk(size_t(1) << 16);
  // Streamed a chunk at a time: memory holds one line (at most kMaxEventLineBytes), never
  // the file.
  while (const size_t got = in.read(chunk.data(), chunk.size())) {
    const char* p = reinterpret_cast<const char*>(chunk.data());
    const char* end = p + got;
    while (p < end) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
      const char* stop = nl ? nl : end;
      if (!too_long && line.size() + size_t(stop - p) <= kMaxEventLineBytes) line.append(p, stop);
      else too_long = true, line.clear();
      if (!nl) break;
      add_line(log, line, false, too_long);
      line.clear();
      too_long = false;
      p = nl + 1;
    }
  }
  if (!line.empty() || too_long) add_line(log, line, true, too_long);
  return log;
}

json read_run_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    throw std::runtime_error(fmt::format("{}: not a JSON object (damaged run.json?)", path));
  return j;
}

}  // namespace hg::io
