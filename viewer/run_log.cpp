// The run-folder reader: see run_log.h for what it does with odd input.
#include "viewer/run_log.h"

#include "framework/io/run_log.h"  // hg::io::event_number: "nan"/"inf" as numbers

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <fstream>
#include <sstream>

namespace hg::viewer {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr size_t kMaxProblems = 20;  // kept for the Runs panel; the count goes on

// Typed field access that reports instead of throwing: a wrong type makes the line corrupt.
bool get_int(const json& j, const char* key, int64_t& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return false;
  out = it->is_number_float() ? static_cast<int64_t>(it->get<double>()) : it->get<int64_t>();
  return true;
}
// A number, or the strings "nan" / "inf" / "-inf" that framework/io writes for non-finite
// values (docs/run-log.md; hg::io::event_number is the one reader of that convention).
bool get_num(const json& j, const char* key, double& out) {
  auto it = j.find(key);
  if (it == j.end()) return false;
  if (it->is_number()) {
    out = it->get<double>();
    return true;
  }
  if (!it->is_string()) return false;
  try {
    out = hg::io::event_number(*it);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}
bool get_bool(const json& j, const char* key, bool& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_boolean()) return false;
  out = it->get<bool>();
  return true;
}
bool get_str(const json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return false;
  out = it->get<std::string>();
  return true;
}

}  // namespace

// ---- one line -------------------------------------------------------------------------

bool parse_event_line(const std::string& line, RunData& d, std::string* why) {
  auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("not valid JSON");
  if (!j.is_object()) return fail("not a JSON object");
  std::string type;
  if (!get_str(j, "type", type)) return fail("no \"type\" string");
  int64_t step = 0;
  if (!get_int(j, "step", step)) return fail("no \"step\" number");

  if (type == "scalar") {
    std::string name;
    double value = 0;
    if (!get_str(j, "name", name)) return fail("scalar without \"name\"");
    if (!get_num(j, "value", value)) {
      // Some JSON writers turn NaN/inf into null: keep such a point, as NaN.
      auto it = j.find("value");
      if (it == j.end() || !it->is_null()) return fail("scalar without a numeric \"value\"");
      value = std::numeric_limits<double>::quiet_NaN();
    }
    d.scalars[name].push_back({step, value});
  } else if (type == "loss_scale") {
    LossScalePoint p{step, 1.0, false, false};
    if (!get_num(j, "scale", p.scale)) return fail("loss_scale without \"scale\"");
    get_bool(j, "found_inf", p.found_inf);  // optional flags default to false
    get_bool(j, "skipped", p.skipped);
    d.loss_scale.push_back(p);
  } else if (type == "grad_hist") {
    std::string param;
    if (!get_str(j, "param", param)) return fail("grad_hist without \"param\"");
    GradHist h;
    h.step = step;
    int64_t lo = -40, hi = 16;
    get_num(j, "scale", h.scale);
    get_int(j, "exp_min", lo);
    get_int(j, "exp_max", hi);
    if (hi < lo || hi - lo > 4096) return fail("grad_hist with exp_max < exp_min");
    h.exp_min = static_cast<int>(lo);
    h.exp_max = static_cast<int>(hi);
    auto c = j.find("counts");
    if (c == j.end() || !c->is_array()) return fail("grad_hist without a \"counts\" array");
    if (static_cast<int64_t>(c->size()) != hi - lo + 1)
      return fail("grad_hist \"counts\" has " + std::to_string(c->size()) + " entries, expected " +
                  std::to_string(hi - lo + 1) + " (exp_min..exp_max)");
    h.counts.reserve(c->size());
    for (const auto& v : *c) {
      if (!v.is_number()) return fail("grad_hist \"counts\" holds a non-number");
      h.counts.push_back(v.get<int64_t>());
    }
    get_int(j, "below", h.below);
    get_int(j, "above", h.above);
    get_int(j, "zeros", h.zeros);
    get_int(j, "fp16_underflow", h.fp16_underflow);
    get_int(j, "fp16_subnormal", h.fp16_subnormal);
    get_int(j, "fp16_overflow", h.fp16_overflow);
    get_int(j, "inf", h.inf);
    get_int(j, "nan", h.nan);
    if (!get_int(j, "total", h.total)) return fail("grad_hist without \"total\"");
    get_num(j, "lost_update_fraction", h.lost_update_fraction);
    auto& v = d.grads[param];
    if (v.empty()) d.params.push_back(param);
    v.push_back(std::move(h));
  } else if (type == "note") {
    std::string text;
    if (!get_str(j, "text", text)) return fail("note without \"text\"");
    d.notes.push_back({step, text});
  } else if (type == "end") {
    std::string status;
    if (!get_str(j, "status", status)) return fail("end without \"status\"");
    d.end_status = status;
  } else {
    d.unknown_types++;
    return true;
  }
  d.events++;
  d.max_step = std::max(d.max_step, step);
  return true;
}

// ---- a run folder ---------------------------------------------------------------------

RunReader::RunReader(std::string dir) {
  data_.dir = std::move(dir);
  data_.name = fs::path(data_.dir).lexically_normal().filename().string();
  if (data_.name.empty())  // "runs/x/" has an empty filename
    data_.name = fs::path(data_.dir).lexically_normal().parent_path().filename().string();
}

void RunReader::read_run_json() {
  fs::path p = fs::path(data_.dir) / "run.json";
  std::error_code ec;
  auto mtime = fs::last_write_time(p, ec);
  if (ec) {
    data_.run_json = nullptr;
    data_.run_json_error = "no run.json in " + data_.dir;
    run_json_mtime_ = -1;
    return;
  }
  int64_t t = mtime.time_since_epoch().count();
  if (t == run_json_mtime_) return;  // unchanged since the last read
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    data_.run_json = json::parse(ss.str());
    data_.run_json_error.clear();
    run_json_mtime_ = t;
  } catch (const json::exception& e) {
    // Perhaps mid-rewrite (writers rename atomically, but be lenient): try again next poll.
    data_.run_json = nullptr;
    data_.run_json_error = p.string() + ": " + e.what();
    return;
  }
  if (data_.run_json.is_object()) {
    if (auto it = data_.run_json.find("name"); it != data_.run_json.end() && it->is_string())
      data_.name = it->get<std::string>();
    if (auto it = data_.run_json.find("synthetic"); it != data_.run_json.end() && it->is_boolean())
      data_.synthetic = it->get<bool>();
  }
  version_++;
}

void RunReader::reset_events() {
  RunData fresh;
  fresh.dir = data_.dir;
  fresh.name = data_.name;
  fresh.run_json = data_.run_json;
  fresh.run_json_error = data_.run_json_error;
  fresh.synthetic = data_.synthetic;
  fresh.restarts = data_.restarts + 1;
  data_ = std::move(fresh);
  offset_ = 0;
  pending_.clear();
}

void RunReader::consume_line(const char* begin, const char* end) {
  if (end > begin && end[-1] == '\r') --end;  // tolerate CRLF
  bool blank = std::all_of(begin, end, [](char c) { return c == ' ' || c == '\t'; });
  if (blank) return;
  data_.lines++;
  std::string why;
  if (!parse_event_line(std::string(begin, end), data_, &why)) {
    data_.corrupt_lines++;
    if (data_.problems.size() < kMaxProblems)
      data_.problems.push_back("line " + std::to_string(data_.lines) + ": " + why);
  }
}

bool RunReader::poll(int64_t max_bytes) {
  uint64_t before = version_;
  read_run_json();

  fs::path p = fs::path(data_.dir) / "events.jsonl";
  std::error_code ec;
  auto size = static_cast<int64_t>(fs::file_size(p, ec));
  if (ec) size = 0;  // no events yet
  int64_t read_pos = offset_ + static_cast<int64_t>(pending_.size());
  if (size < read_pos) {  // the file was rewritten: start over
    reset_events();
    read_pos = 0;
    version_++;
  }
  file_size_ = size;
  caught_up_ = true;
  if (size == read_pos) return version_ != before;

  int64_t n = std::min(size - read_pos, max_bytes);
  std::ifstream in(p, std::ios::binary);
  if (!in) return version_ != before;
  in.seekg(read_pos);
  std::string chunk(static_cast<size_t>(n), '\0');
  in.read(chunk.data(), n);
  chunk.resize(static_cast<size_t>(in.gcount()));
  caught_up_ = read_pos + static_cast<int64_t>(chunk.size()) >= size;

  // Split pending + chunk into complete lines; what follows the last '\n' stays pending.
  pending_ += chunk;
  size_t start = 0;
  for (size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1)
    consume_line(pending_.data() + start, pending_.data() + nl);
  offset_ += static_cast<int64_t>(start);
  pending_.erase(0, start);

  // A last line without '\n' is complete only if it is already a whole JSON object (a
  // truncated object always lacks its closing brace, so it cannot parse).
  if (caught_up_ && !pending_.empty() && json::accept(pending_)) {
    consume_line(pending_.data(), pending_.data() + pending_.size());
    offset_ += static_cast<int64_t>(pending_.size());
    pending_.clear();
  }
  data_.pending_bytes = static_cast<int64_t>(pending_.size());
  version_++;
  return true;
}

// ---- finding runs ---------------------------------------------------------------------

bool is_run_dir(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(dir) / "run.json", ec) ||
         fs::is_regular_file(fs::path(dir) / "events.jsonl", ec);
}

std::vector<std::string> list_run_dirs(const std::string& root) {
  std::vector<std::string> out;
  if (is_run_dir(root)) return {root};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (e.is_directory(ec) && is_run_dir(e.path().string())) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hg::viewer
