#include "framework/io/run_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <stdexcept>

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

  const std::string path = dir_ + "/events.jsonl";
  events_ = std::fopen(path.c_str(), append ? "ab" : "wb");
  if (!events_)
    throw std::runtime_error(fmt::format("cannot open {} for writing: {}", path, std::strerror(errno)));
}

RunLog::~RunLog() {
  try {
    if (!ended_) end(std::uncaught_exceptions() > uncaught_at_start_ ? "failed" : "finished");
  } catch (...) {
    // A destructor must not throw; the events already written stay valid.
  }
  if (events_) std::fclose(events_);
}

void RunLog::write_run_json() { write_file_atomic(dir_ + "/run.json", run_.dump(2) + "\n"); }

void RunLog::event(std::string_view type, int64_t step, json fields) {
  if (!events_) throw std::logic_error("RunLog: event after the log was closed");
  if (!fields.is_object()) throw std::invalid_argument("RunLog::event: fields must be a JSON object");
  json e = json::object();
  e["type"] = type;
  e["step"] = step;
  for (auto& [k, v] : fields.items()) e[k] = std::move(v);
  // One fwrite of a whole line, then fflush: a reader never sees a line split by us
  // (a crash mid-write can still leave a partial last line, which readers tolerate).
  const std::string line = e.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), events_) != line.size() || std::fflush(events_) != 0)
    throw std::runtime_error(fmt::format("cannot append to {}/events.jsonl: {}", dir_, std::strerror(errno)));
  last_step_ = std::max(last_step_, step);
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

void RunLog::note(int64_t step, std::string_view text) { event("note", step, {{"text", text}}); }

void RunLog::end(std::string_view status) {
  if (ended_) return;
  event("end", last_step_, {{"status", status}});
  ended_ = true;
  run_["status"] = status;
  run_["ended"] = utc_timestamp();
  write_run_json();
}

// ---- reading ------------------------------------------------------------------------------

EventLog read_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EventLog log;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    const bool last_unterminated = nl == std::string::npos;
    if (last_unterminated) nl = text.size();
    const std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
    json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (e.is_discarded() || !e.is_object() || !e.contains("type") || !e["type"].is_string()) {
      if (last_unterminated) log.partial_last_line = true;  // a run still being written
      else ++log.corrupt_lines;
      continue;
    }
    const std::string& type = e["type"].get_ref<const std::string&>();
    if (type != "scalar" && type != "loss_scale" && type != "grad_hist" && type != "note" && type != "end")
      ++log.unknown_types;
    log.events.push_back(std::move(e));
  }
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
