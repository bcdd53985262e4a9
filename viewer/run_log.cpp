// The run-folder reader: see run_log.h for what it does with odd input.
//
// Sections (grep for "----"):
//   limits        the formats' exponent and scale range; the FP8 formats by name
//   validation    Fields: each field read with its type, finiteness and range checked
//   events        one checked reader per event type, then the store (series kept sorted)
//   a run folder  run.json, and events.jsonl streamed in chunks with a line-length cap
//   problems      the one-line summaries the panels and the headless output print
//   finding runs
#include "viewer/run_log.h"

#include "framework/dtype/float_format.h"
#include "framework/io/run_log.h"  // hg::io::event_number: "nan"/"inf" as numbers

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/format.h>

namespace hg::viewer {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace limits;

namespace {

constexpr size_t kMaxProblems = 20;      // kept for the panels; the count goes on
constexpr int64_t kReadChunk = 1 << 20;  // bytes read at a time

}  // namespace

// ---- limits -------------------------------------------------------------------------------
// The histogram's bins and the loss scale live in the formats' range: the smallest subnormal
// and the largest finite value of every format halfgrad trains in (FloatFormat, all_formats()).

int min_hist_exponent() {
  int e = 0;
  for (const FloatFormat* f : all_formats()) e = std::min(e, std::ilogb(f->min_subnormal()));
  return e;  // -149 (FP32)
}
int max_hist_exponent() {
  int e = 0;
  for (const FloatFormat* f : all_formats()) e = std::max(e, std::ilogb(f->max_finite()));
  return e;  // 127 (FP32)
}
double min_loss_scale() { return std::ldexp(1.0, min_hist_exponent()); }
double max_loss_scale() {
  double m = 0;
  for (const FloatFormat* f : all_formats()) m = std::max(m, f->max_finite());
  return m;  // 3.4e38 (FP32)
}

const FloatFormat* fp8_format(const std::string& name) {
  return name == "E4M3" ? &kE4M3 : name == "E5M2" ? &kE5M2 : nullptr;
}
const char* fp8_format_name(const FloatFormat* f) {
  return f == &kE4M3 ? "E4M3" : f == &kE5M2 ? "E5M2" : "?";
}

const char* grad_dtype_name(GradDtype d) {
  switch (d) {
    case GradDtype::F32: return "f32";
    case GradDtype::F16: return "f16";
    case GradDtype::BF16: return "bf16";
    case GradDtype::F64: return "f64";
    case GradDtype::Unknown: break;
  }
  return "";
}

// ---- validation ---------------------------------------------------------------------------

namespace {

// A bad value, described briefly: a field may hold a 1 MB string or arrays nested 10^5 deep,
// so nothing here prints or walks a whole value.
std::string describe(const json& v) {
  switch (v.type()) {
    case json::value_t::string: {
      const size_t n = v.get_ref<const std::string&>().size();
      return n <= 24 ? v.dump() : fmt::format("a string of {} bytes", n);
    }
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    default: return v.dump();  // a number, true/false, null: short
  }
}

// "2^40" for the powers of two the limits use, else the number.
std::string bound(int64_t v) {
  if (v >= (1 << 20) && (v & (v - 1)) == 0) return fmt::format("2^{}", std::ilogb(double(v)));
  return std::to_string(v);
}

bool has_control_chars(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return (unsigned char)c < 0x20 || c == 0x7f; });
}

enum class Need { Required, Optional };

// The validation step. Reads the fields of one event object, checking each for type,
// finiteness and range; the first problem is kept as "<type> <field>: <what>" and makes every
// later read a no-op, so a reader lists its checks one after the other and asks ok() once.
// Every value a panel draws was read through one of these.
class Fields {
 public:
  explicit Fields(const json& j) : j_(j) {}
  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  void set_event(const std::string& type) { event_ = type + " "; }
  // `index` >= 0 names an element of an array field: counts[30].
  void fail(const char* field, const std::string& what, int64_t index = -1) {
    if (!ok()) return;
    why_ = event_ + field + (index >= 0 ? fmt::format("[{}]", index) : "") + ": " + what;
  }

  // A whole number in [lo, hi] (a JSON integer, or a float with no fraction: 5.0).
  void whole(const char* key, int64_t lo, int64_t hi, int64_t& out, Need need = Need::Required) {
    if (const json* v = find(key, need)) whole_value(*v, key, -1, lo, hi, out);
  }
  void whole_value(const json& v, const char* key, int64_t index, int64_t lo, int64_t hi,
                   int64_t& out) {
    if (!ok()) return;
    if (v.is_number_integer()) {  // signed or unsigned
      // Compare unsigned ones as such: 18446744073709551615 must not wrap to -1.
      const bool above = v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(hi) : v.get<int64_t>() > hi;
      const bool below = !v.is_number_unsigned() && v.get<int64_t>() < lo;
      if (above || below) return out_of_range(v, key, index, lo, hi);
      out = v.get<int64_t>();
    } else if (v.is_number_float()) {
      const double x = v.get<double>();  // JSON has no NaN or inf: x is finite
      if (x != std::floor(x)) return fail(key, describe(v) + " is not a whole number", index);
      if (!(x >= double(lo) && x <= double(hi))) return out_of_range(v, key, index, lo, hi);
      out = static_cast<int64_t>(x);
    } else {
      fail(key, describe(v) + " is not a whole number", index);
    }
  }
  // How many gradient values: a whole number 0 .. kMaxCount.
  void count(const char* key, int64_t& out, Need need = Need::Required) {
    whole(key, 0, kMaxCount, out, need);
  }

  // A number in [lo, hi]. Non-finite values ("nan", "inf", "-inf" as framework/io writes
  // them, or null) are taken only where the schema allows them (`nonfinite`).
  void number(const char* key, double lo, double hi, double& out, Need need, bool nonfinite) {
    const json* v = find(key, need);
    if (!v) return;
    double x = 0;
    if (v->is_number()) {
      x = v->get<double>();
    } else if (v->is_null() && nonfinite) {  // some JSON writers turn NaN/inf into null
      x = std::numeric_limits<double>::quiet_NaN();
    } else {
      try {
        if (!v->is_string()) throw std::invalid_argument("not a number");
        x = hg::io::event_number(*v);  // "nan", "inf", "-inf"
      } catch (const std::exception&) {
        return fail(key, describe(*v) + " is not a number");
      }
    }
    if (!std::isfinite(x) && !nonfinite) return fail(key, describe(*v) + " is not a finite number");
    if (std::isfinite(x) && !(x >= lo && x <= hi))
      return fail(key, fmt::format("{} is outside {:g} .. {:g}", describe(*v), lo, hi));
    out = x;
  }

  // A magnitude (an amax, a scale): a number >= 0, or "inf" / "nan" / null, which a writer logs
  // for a tensor that overflowed. A negative number, -inf included, is not a magnitude.
  void magnitude(const char* key, double& out) {
    double x = 0;
    number(key, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max(), x, Need::Required,
           /*nonfinite=*/true);
    if (ok() && x < 0) return fail(key, fmt::format("{:g} is negative", x));
    if (ok()) out = x;
  }

  void boolean(const char* key, bool& out, Need need = Need::Optional) {
    const json* v = find(key, need);
    if (!v) return;
    if (!v->is_boolean()) return fail(key, describe(*v) + " is not true or false");
    out = v->get<bool>();
  }

  // A name: 1..kMaxNameBytes bytes, no control characters (it becomes a label on screen).
  void name(const char* key, std::string& out, Need need = Need::Required) {
    const std::string* s = string_field(key, kMaxNameBytes, need);
    if (!s) return;
    if (s->empty()) return fail(key, "empty");
    if (has_control_chars(*s)) return fail(key, "holds control characters");
    out = *s;
  }
  // Any text up to max_bytes.
  void text(const char* key, std::string& out, size_t max_bytes, Need need = Need::Required) {
    if (const std::string* s = string_field(key, max_bytes, need)) out = *s;
  }

  // The field's value; nullptr when absent (a problem unless optional) or after a problem.
  const json* find(const char* key, Need need) {
    if (!ok()) return nullptr;
    auto it = j_.find(key);
    if (it != j_.end()) return &*it;
    if (need == Need::Required) fail(key, "missing");
    return nullptr;
  }

 private:
  const std::string* string_field(const char* key, size_t max_bytes, Need need) {
    const json* v = find(key, need);
    if (!v) return nullptr;
    if (!v->is_string()) return fail(key, describe(*v) + " is not a string"), nullptr;
    const std::string& s = v->get_ref<const std::string&>();
    if (s.size() > max_bytes)
      return fail(key, fmt::format("{} bytes long, more than {}", s.size(), max_bytes)), nullptr;
    return &s;
  }
  void out_of_range(const json& v, const char* key, int64_t index, int64_t lo, int64_t hi) {
    if (lo == 0 && v.get<double>() < 0) return fail(key, describe(v) + " is negative", index);
    fail(key, fmt::format("{} is outside {} .. {}", describe(v), bound(lo), bound(hi)), index);
  }

  const json& j_;
  std::string event_;
  std::string why_;
};

// ---- events: one checked reader per type --------------------------------------------------
// Each reads every field through Fields into a local value; only a value that passed them all
// is stored.

// The "dtype" of a grad_hist: one of the names grad_dtype_name gives; absent in older logs.
void read_grad_dtype(Fields& f, GradDtype& out) {
  const json* v = f.find("dtype", Need::Optional);
  if (!v) return;  // a log from before the field: Unknown
  if (!v->is_string()) return f.fail("dtype", describe(*v) + " is not a string");
  for (GradDtype d : {GradDtype::F32, GradDtype::F16, GradDtype::BF16, GradDtype::F64})
    if (v->get_ref<const std::string&>() == grad_dtype_name(d)) return void(out = d);
  f.fail("dtype", describe(*v) + " is not one of f32, f16, bf16, f64");
}

bool read_grad_hist(Fields& f, int64_t step, GradHist& h, std::string& param) {
  h.step = step;
  f.name("param", param);
  f.number("scale", min_loss_scale(), max_loss_scale(), h.scale, Need::Optional, /*nonfinite=*/false);
  int64_t lo = h.exp_min, hi = h.exp_max;  // the defaults when absent (older logs)
  f.whole("exp_min", min_hist_exponent(), max_hist_exponent(), lo, Need::Optional);
  f.whole("exp_max", min_hist_exponent(), max_hist_exponent(), hi, Need::Optional);
  if (f.ok() && hi < lo) f.fail("exp_max", fmt::format("{} is below exp_min {}", hi, lo));
  const json* c = f.find("counts", Need::Required);
  if (!f.ok()) return false;
  // exp_min..exp_max lie in the formats' range: at most 277 bins.
  const size_t bins = static_cast<size_t>(hi - lo + 1);
  if (!c->is_array()) return f.fail("counts", describe(*c) + " is not an array"), false;
  if (c->size() != bins)
    return f.fail("counts", fmt::format("{} entries, expected {} (exp_min..exp_max)", c->size(), bins)), false;
  h.counts.assign(bins, 0);
  for (size_t i = 0; i < bins; ++i) f.whole_value((*c)[i], "counts", int64_t(i), 0, kMaxCount, h.counts[i]);
  f.count("below", h.below, Need::Optional);
  f.count("above", h.above, Need::Optional);
  f.count("zeros", h.zeros, Need::Optional);
  f.count("fp16_underflow", h.fp16_underflow, Need::Optional);
  f.count("fp16_subnormal", h.fp16_subnormal, Need::Optional);
  f.count("fp16_overflow", h.fp16_overflow, Need::Optional);
  f.count("inf", h.inf, Need::Optional);
  f.count("nan", h.nan, Need::Optional);
  f.count("total", h.total);
  f.number("lost_update_fraction", 0.0, 1.0, h.lost_update_fraction, Need::Optional, false);
  read_grad_dtype(f, h.dtype);
  if (!f.ok()) return false;
  h.exp_min = static_cast<int>(lo), h.exp_max = static_cast<int>(hi);
  // The schema's arithmetic (docs/run-log.md): every value is in exactly one of the bins,
  // below, above, zeros, inf or nan; the FP16 zones are parts of the finite non-zero ones.
  // (At most 285 terms of at most 2^48 each: no overflow.)
  int64_t finite_nonzero = h.below + h.above;
  for (int64_t n : h.counts) finite_nonzero += n;
  const int64_t sum = finite_nonzero + h.zeros + h.inf + h.nan;
  if (sum != h.total)
    f.fail("total", fmt::format("{}, but the bins, below, above, zeros, inf and nan add up to {}",
                                h.total, sum));
  else if (h.fp16_underflow + h.fp16_subnormal + h.fp16_overflow > finite_nonzero)
    f.fail("fp16_underflow", fmt::format("fp16_underflow + fp16_subnormal + fp16_overflow exceed "
                                         "the {} finite non-zero values", finite_nonzero));
  // F16's finite values lie in 2^-24 .. 65504 (and 0): counts outside it are not F16 values,
  // and the panel's "an underflow is among the zeros" would be false.
  else if (h.dtype == GradDtype::F16 && h.fp16_underflow + h.fp16_overflow > 0)
    f.fail("dtype", fmt::format("f16 values hold none below 2^-24 or above 65504, but fp16_underflow "
                                "is {} and fp16_overflow {}", h.fp16_underflow, h.fp16_overflow));
  return f.ok();
}

// Appends p to a series sorted by step. A point whose step is not after the last one was
// logged again (a run resumed from an earlier checkpoint re-logs the steps after it; a line
// repeated): the newer line wins, and the points from its step on are dropped. Returns them.
template <class Point>
std::vector<Point> add_in_step_order(std::vector<Point>& v, Point p) {
  auto from = std::lower_bound(v.begin(), v.end(), p.step,
                               [](const Point& a, int64_t s) { return a.step < s; });
  std::vector<Point> dropped(std::make_move_iterator(from), std::make_move_iterator(v.end()));
  v.erase(from, v.end());
  v.push_back(std::move(p));
  return dropped;
}

// A memory event: the five categories, their sum, and what was live after the step.
bool read_memory(Fields& f, int64_t step, MemoryPoint& m, std::string& device) {
  m.step = step;
  f.name("device", device);
  if (f.ok() && device != "cpu" && device != "cuda") f.fail("device", describe(json(device)) + " is not cpu or cuda");
  int64_t sum = 0;
  for (int i = 0; i < MemoryPoint::kCategories; ++i) {
    f.whole(MemoryPoint::name(i), 0, kMaxBytes, m.bytes[i]);
    sum += m.bytes[i];  // at most 5 · 2^50: no overflow
  }
  f.whole("peak", 0, kMaxBytes, m.peak);
  f.whole("live", 0, kMaxBytes, m.live);
  if (f.ok() && m.peak != sum)
    f.fail("peak", fmt::format("{}, but the five categories add up to {}", m.peak, sum));
  return f.ok();
}

// An fp8_scale event: one FP8 cast of one tensor (framework/fp8/linear.h writes it). The format
// names come from fp8::format_name; the formats themselves from framework/dtype.
bool read_fp8_scale(Fields& f, int64_t step, Fp8ScalePoint& p, std::string& tensor, const FloatFormat*& format) {
  p.step = step;
  std::string name;
  f.name("tensor", tensor);
  f.name("format", name);
  format = fp8_format(name);
  if (f.ok() && !format) f.fail("format", describe(json(name)) + " is not E4M3 or E5M2");
  f.magnitude("amax", p.amax);
  f.magnitude("scale", p.scale);
  f.magnitude("scale_max", p.scale_max);
  f.magnitude("history_amax", p.history_amax);
  f.number("underflow", 0.0, 1.0, p.underflow, Need::Required, /*nonfinite=*/false);
  f.count("saturated", p.saturated);
  // Tiled recipes log their smallest and largest tile scale; per tensor the two are equal.
  if (f.ok() && std::isfinite(p.scale) && std::isfinite(p.scale_max) && p.scale_max < p.scale)
    f.fail("scale_max", fmt::format("{:g} is below scale {:g}", p.scale_max, p.scale));
  return f.ok();
}

int64_t held(const GradHist& h) { return int64_t(sizeof h + h.counts.size() * sizeof(int64_t)); }
int64_t held(const std::string& s) { return int64_t(sizeof s + s.size() + 64); }  // + a map node

}  // namespace

bool parse_event_line(const std::string& line, RunData& d, std::string* why) {
  auto fail = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  // Parsing: nlohmann's parser is iterative, so arrays nested 10^5 deep cannot overflow the stack.
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return fail("not valid JSON");
  if (!j.is_object()) return fail("not a JSON object");

  // Validation: the fields every event has, then the type's own.
  Fields f(j);
  std::string type;
  int64_t step = 0;
  f.name("type", type);
  f.whole("step", 0, kMaxStep, step);
  if (!f.ok()) return fail(f.why());
  f.set_event(type);

  // Storing: only values that passed every check. Series stay sorted by step; points that a
  // later line replaced are counted, and their memory given back.
  auto replaced = [&](size_t n, int64_t bytes_each) {
    d.replaced_points += static_cast<int64_t>(n);
    d.held_bytes -= static_cast<int64_t>(n) * bytes_each;
  };
  if (type == "scalar") {
    std::string name;
    ScalarPoint p{step, 0.0};
    f.name("name", name);
    f.number("value", -std::numeric_limits<double>::max(), std::numeric_limits<double>::max(),
             p.value, Need::Required, /*nonfinite=*/true);
    int64_t epoch = 0;
    f.whole("epoch", 0, kMaxStep, epoch, Need::Optional);
    if (f.ok() && !d.scalars.count(name) && d.scalars.size() >= kMaxScalarNames)
      f.fail("name", fmt::format("a run may have {} scalar names; \"{}\" is one more", kMaxScalarNames, name));
    if (!f.ok()) return fail(f.why());
    if (!d.scalars.count(name)) d.held_bytes += held(name);
    d.held_bytes += sizeof p;
    replaced(add_in_step_order(d.scalars[name], p).size(), sizeof p);
  } else if (type == "loss_scale") {
    LossScalePoint p{step, 1.0, false, false};
    // A scaler that broke may log "inf" or "nan": kept (the panel draws only finite scales).
    f.number("scale", min_loss_scale(), max_loss_scale(), p.scale, Need::Required, true);
    if (f.ok() && p.scale == -INFINITY) f.fail("scale", "-inf is not a loss scale");
    f.boolean("found_inf", p.found_inf);  // optional flags default to false
    f.boolean("skipped", p.skipped);
    if (!f.ok()) return fail(f.why());
    d.held_bytes += sizeof p;
    replaced(add_in_step_order(d.loss_scale, p).size(), sizeof p);
  } else if (type == "grad_hist") {
    GradHist h;
    std::string param;
    read_grad_hist(f, step, h, param);
    if (f.ok() && !d.grads.count(param) && d.params.size() >= kMaxParams)
      f.fail("param", fmt::format("a run may have {} parameters with histograms; \"{}\" is one more",
                                  kMaxParams, param));
    if (!f.ok()) return fail(f.why());
    if (!d.grads.count(param)) {
      d.params.push_back(param);
      d.held_bytes += 2 * held(param);
    }
    d.held_bytes += held(h);
    for (const GradHist& old : add_in_step_order(d.grads[param], std::move(h))) replaced(1, held(old));
  } else if (type == "memory") {
    MemoryPoint m;
    std::string device;
    if (!read_memory(f, step, m, device)) return fail(f.why());
    d.held_bytes += sizeof m;
    replaced(add_in_step_order(d.memory[device], m).size(), sizeof m);
  } else if (type == "fp8_scale") {
    Fp8ScalePoint p;
    std::string tensor;
    const FloatFormat* format = nullptr;
    read_fp8_scale(f, step, p, tensor, format);
    auto known = d.fp8.find(tensor);
    if (f.ok() && known == d.fp8.end() && d.fp8_tensors.size() >= kMaxFp8Tensors)
      f.fail("tensor", fmt::format("a run may have {} FP8 tensors; \"{}\" is one more", kMaxFp8Tensors, tensor));
    // One tensor, one format: a line with the other one is damage, unless it replaces every
    // point of the tensor (then the old format goes with them).
    if (f.ok() && known != d.fp8.end() && known->second.format != format && !known->second.points.empty() &&
        known->second.points.front().step < step)
      f.fail("format", fmt::format("{}, but {} was cast to {} before step {}", fp8_format_name(format), tensor,
                                   fp8_format_name(known->second.format), step));
    if (!f.ok()) return fail(f.why());
    if (known == d.fp8.end()) {
      d.fp8_tensors.push_back(tensor);
      d.held_bytes += 2 * held(tensor);
    }
    Fp8Series& series = d.fp8[tensor];
    series.format = format;
    d.held_bytes += sizeof p;
    replaced(add_in_step_order(series.points, p).size(), sizeof p);
  } else if (type == "note") {
    Note n{step, ""};
    f.text("text", n.text, kMaxNoteBytes);
    if (!f.ok()) return fail(f.why());
    d.held_bytes += held(n.text);
    d.notes.push_back(std::move(n));
  } else if (type == "command") {
    CommandEvent c;
    c.step = step;
    f.boolean("applied", c.applied, Need::Required);
    f.name("source", c.source);
    const json* cmd = f.find("command", Need::Optional);
    if (cmd && !cmd->is_object()) f.fail("command", describe(*cmd) + " is not an object");
    if (f.ok() && cmd && cmd->dump().size() > kMaxNoteBytes) f.fail("command", "longer than a note");
    f.text("text", c.text, kMaxNoteBytes, cmd ? Need::Optional : Need::Required);
    f.text("reason", c.reason, kMaxNoteBytes, c.applied ? Need::Optional : Need::Required);
    if (!f.ok()) return fail(f.why());
    if (cmd) c.command = *cmd;
    d.held_bytes += held(c.source) + held(c.text) + held(c.reason) + (cmd ? held(cmd->dump()) : 0);
    d.commands.push_back(std::move(c));
  } else if (type == "end") {
    std::string status;
    f.name("status", status);
    if (!f.ok()) return fail(f.why());
    d.end_status = status;
  } else {
    d.unknown_types++;
    return true;
  }
  d.events++;
  d.max_step = std::max(d.max_step, step);
  return true;
}

// ---- a run folder -------------------------------------------------------------------------

namespace {

// One rank of a data-parallel run (chapter 13: runs/<name>/rank<k>): "rank1" alone would not
// say which run, so the name is "<name>/rank1". That holds for the folder's name and for the
// name in run.json, which a rank's log also sets to "rank1".
fs::path run_folder(const std::string& dir) {
  fs::path path = fs::path(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();  // "runs/x/" has an empty filename
  return path;
}

std::string run_name(const std::string& name, const std::string& dir) {
  const fs::path path = run_folder(dir);
  const bool rank = name.size() > 4 && name.compare(0, 4, "rank") == 0 &&
                    std::all_of(name.begin() + 4, name.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (rank && path.filename() == name && !path.parent_path().filename().empty())
    return path.parent_path().filename().string() + "/" + name;
  return name;
}

}  // namespace

std::string run_folder_name(const std::string& dir) {
  return run_name(run_folder(dir).filename().string(), dir);
}

RunReader::RunReader(std::string dir, int64_t memory_cap) : run_cap_(memory_cap), memory_cap_(memory_cap) {
  data_.dir = std::move(dir);
  data_.name = run_folder_name(data_.dir);
}

namespace {

// True when `j` nests deeper than `limit` levels. Stops looking at the limit, so the
// recursion is bounded however deep the file goes.
bool deeper_than(const json& j, int limit) {
  if (!j.is_structured()) return false;
  if (limit == 0) return true;
  for (const json& v : j)
    if (deeper_than(v, limit - 1)) return true;
  return false;
}

const char* json_kind(const json& j) {
  switch (j.type()) {
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "true or false";
    case json::value_t::null: return "null";
    default: return "a number";
  }
}

}  // namespace

void RunReader::read_run_json() {
  const fs::path p = fs::path(data_.dir) / "run.json";
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  // What run.json holds counts toward the run's memory: nlohmann's tree of a JSON text takes
  // a few times the text (about four for a run.json's short keys and values).
  auto held_json = [&](int64_t bytes) {
    data_.held_bytes += bytes - run_json_held_;
    run_json_held_ = bytes;
  };
  auto bad = [&](const std::string& why) {
    data_.run_json = nullptr;
    data_.run_json_error = why;
    held_json(0);
  };
  data_.run_json_missing = !fs::exists(st);
  if (data_.run_json_missing) {
    bad("no run.json in " + data_.dir);
    run_json_mtime_ = -1;
    return;
  }
  // A pipe or a device: opening it to read could wait forever for a writer.
  if (!fs::is_regular_file(st)) return bad(p.string() + " is not a regular file");
  auto mtime = fs::last_write_time(p, ec);
  const int64_t t = ec ? -2 : mtime.time_since_epoch().count();
  if (t == run_json_mtime_) return;  // unchanged since the last read
  const auto size = fs::file_size(p, ec);
  if (ec) return bad(p.string() + ": " + ec.message());
  if (size > uint64_t(kMaxRunJsonBytes))
    return bad(fmt::format("{} is {} bytes, more than the {} a run.json may have", p.string(), size,
                           kMaxRunJsonBytes));
  std::ifstream in(p, std::ios::binary);
  if (!in) return bad(p.string() + ": " + std::strerror(errno));
  std::string text(size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<size_t>(in.gcount()));
  json j;
  try {
    j = json::parse(text);  // skips a UTF-8 byte-order mark
  } catch (const json::exception& e) {
    // Perhaps mid-rewrite (writers rename atomically, but be lenient): try again next poll.
    return bad(p.string() + ": " + e.what());
  }
  run_json_mtime_ = t;
  version_++;
  if (!j.is_object()) return bad(p.string() + " is " + json_kind(j) + ", not a JSON object");
  if (deeper_than(j, kMaxRunJsonDepth))
    return bad(fmt::format("{} nests deeper than {} levels", p.string(), kMaxRunJsonDepth));
  data_.run_json = std::move(j);
  data_.run_json_error.clear();
  held_json(4 * static_cast<int64_t>(text.size()));
  // The two fields the viewer uses itself, checked like any event field.
  Fields f(data_.run_json);
  std::string name;
  f.name("name", name, Need::Optional);
  f.boolean("synthetic", data_.synthetic);
  if (!f.ok()) data_.run_json_error = p.string() + ": " + f.why() + " (the field is ignored)";
  else if (!name.empty()) data_.name = run_name(name, data_.dir);
}

void RunReader::reset_events() {
  RunData fresh;
  fresh.dir = data_.dir;
  fresh.name = data_.name;
  fresh.run_json = data_.run_json;
  fresh.run_json_error = data_.run_json_error;
  fresh.run_json_missing = data_.run_json_missing;
  fresh.synthetic = data_.synthetic;
  fresh.restarts = data_.restarts + 1;
  fresh.held_bytes = run_json_held_;
  data_ = std::move(fresh);
  offset_ = read_pos_ = line_no_ = 0;
  pending_.clear();
  skipping_ = false;
}

void RunReader::consume_line(const char* begin, const char* end) {
  if (end > begin && end[-1] == '\r') --end;  // tolerate CRLF
  if (line_no_ == 1 && end - begin >= 3 && std::memcmp(begin, "\xEF\xBB\xBF", 3) == 0)
    begin += 3;  // a UTF-8 byte-order mark some editors put first
  bool blank = std::all_of(begin, end, [](char c) { return c == ' ' || c == '\t'; });
  if (blank) return;
  data_.lines++;
  std::string why;
  if (!parse_event_line(std::string(begin, end), data_, &why)) {
    data_.corrupt_lines++;
    if (data_.problems.size() < kMaxProblems)
      data_.problems.push_back("line " + std::to_string(line_no_) + ": " + why);
  }
}

// A line passed kMaxLineBytes without ending: counted now, and its bytes up to the next '\n'
// are dropped as they arrive (never held: a 100 MB line costs no memory).
void RunReader::line_too_long() {
  data_.lines++;
  data_.corrupt_lines++;
  if (data_.problems.size() < kMaxProblems)
    data_.problems.push_back(fmt::format("line {}: longer than {} bytes, skipped unread",
                                         line_no_ + 1, kMaxLineBytes));
  pending_.clear();
  pending_.shrink_to_fit();
  skipping_ = true;
}

void RunReader::feed(const char* p, const char* end) {
  while (p < end && data_.stopped_at_line == 0) {
    const char* nl = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
    const char* stop = nl ? nl : end;
    if (!skipping_) {
      if (int64_t(pending_.size()) + (stop - p) > kMaxLineBytes) line_too_long();
      else pending_.append(p, stop);
    }
    read_pos_ += (nl ? nl + 1 : end) - p;
    if (!nl) return;
    ++line_no_;
    if (!skipping_) consume_line(pending_.data(), pending_.data() + pending_.size());
    skipping_ = false;
    pending_.clear();
    offset_ = read_pos_;
    p = nl + 1;
    if (data_.held_bytes > memory_cap_) {
      data_.stopped_at_line = line_no_ + 1;
      data_.stopped_at_share = memory_cap_ < run_cap_;
      data_.stopped_share = std::max<int64_t>(0, memory_cap_);
    }
  }
}

void RunReader::set_budget_share(int64_t bytes) {
  memory_cap_ = std::min(bytes, run_cap_);
  if (data_.stopped_at_line > 0 && data_.held_bytes < memory_cap_) {
    data_.stopped_at_line = data_.stopped_share = 0;  // room again: the next poll reads on from offset_
    data_.stopped_at_share = false;
    caught_up_ = false;
  }
}

void RunReader::unload() {
  const uint64_t version = version_;
  *this = RunReader(data_.dir, run_cap_);
  version_ = version + 1;
}

bool RunReader::poll(int64_t max_bytes) {
  uint64_t before = version_;
  polled_ = true;
  read_run_json();
  caught_up_ = true;

  const fs::path p = fs::path(data_.dir) / "events.jsonl";
  std::error_code ec;
  const fs::file_status st = fs::status(p, ec);
  int64_t size = 0;  // no events yet
  data_.events_error.clear();
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    data_.events_error = p.string() + " is not a regular file";  // a folder, a pipe
  } else if (fs::exists(st)) {
    size = static_cast<int64_t>(fs::file_size(p, ec));
    if (ec) data_.events_error = p.string() + ": " + ec.message(), size = 0;
  }
  if (size < read_pos_) {  // the file was rewritten: start over
    reset_events();
    version_++;
  }
  file_size_ = size;
  if (size == read_pos_ || data_.stopped_at_line > 0) return version_ != before;

  std::ifstream in(p, std::ios::binary);
  if (!in) {
    data_.events_error = p.string() + ": " + std::strerror(errno);
    return version_ != before;
  }
  in.seekg(read_pos_);
  // Stream the new bytes through a buffer of at most 1 MiB: memory stays flat however big the
  // file. The buffer lives only while reading, so a thousand runs do not each keep one.
  int64_t budget = max_bytes;
  bool short_read = false;  // the file held less than its size said (truncated under us)
  std::vector<char> chunk(static_cast<size_t>(std::min({kReadChunk, size - read_pos_, budget})));
  while (read_pos_ < size && budget > 0 && data_.stopped_at_line == 0 && !short_read) {
    const int64_t n = std::min({int64_t(chunk.size()), size - read_pos_, budget});
    in.read(chunk.data(), n);
    const int64_t got = in.gcount();
    short_read = got < n;
    feed(chunk.data(), chunk.data() + got);
    budget -= got;
  }
  // Caught up: nothing more to read now (a short read counts: the next poll sees the size anew).
  caught_up_ = read_pos_ >= size || short_read || data_.stopped_at_line > 0;

  // A last line without '\n' is complete only if it is already a whole JSON object (a
  // truncated object always lacks its closing brace, so it cannot parse).
  if (caught_up_ && !skipping_ && !pending_.empty() && json::accept(pending_)) {
    ++line_no_;
    consume_line(pending_.data(), pending_.data() + pending_.size());
    offset_ = read_pos_;
    pending_.clear();
  }
  data_.pending_bytes = static_cast<int64_t>(pending_.size());
  version_++;
  return true;
}

// ---- problems -----------------------------------------------------------------------------

std::vector<std::string> run_problems(const RunData& d, bool incomplete) {
  std::vector<std::string> out;
  if (d.corrupt_lines > 0)
    out.push_back(fmt::format("{} corrupt line{}, not drawn (first: {})", d.corrupt_lines,
                              d.corrupt_lines == 1 ? "" : "s",
                              d.problems.empty() ? "?" : d.problems.front()));
  if (!d.run_json_error.empty() && !d.run_json_missing) out.push_back(d.run_json_error);
  if (!d.events_error.empty()) out.push_back(d.events_error);
  if (d.stopped_at_line > 0 && !d.stopped_at_share)
    out.push_back(fmt::format("stopped reading at line {}: the events kept reached the viewer's "
                              "memory cap of {} MiB per run", d.stopped_at_line, kMaxHeldBytes >> 20));
  else if (d.stopped_at_line > 0)
    out.push_back(fmt::format("stopped reading at line {}: the runs shown filled the viewer's memory budget "
                              "(this run's share: {:.1f} MiB); show fewer runs at once, or raise --memory-budget",
                              d.stopped_at_line, d.stopped_share / 1048576.0));
  if (incomplete && d.pending_bytes > 0)
    out.push_back(fmt::format("an incomplete last line ({} bytes) was not read", d.pending_bytes));
  return out;
}

// ---- finding runs -------------------------------------------------------------------------

bool is_run_dir(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(dir) / "run.json", ec) ||
         fs::is_regular_file(fs::path(dir) / "events.jsonl", ec);
}

namespace {

// Numbers in names compared as numbers: rank2 before rank10, so the first runs of a job are
// its first ranks (the Scale panel overlays the first runs found).
bool natural_less(const std::string& a, const std::string& b) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (!digit(a[i]) || !digit(b[j])) {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
      continue;
    }
    size_t i0 = i, j0 = j;  // a run of digits each: fewer significant digits is smaller
    while (i0 < a.size() && a[i0] == '0') ++i0;
    while (j0 < b.size() && b[j0] == '0') ++j0;
    size_t i1 = i0, j1 = j0;
    while (i1 < a.size() && digit(a[i1])) ++i1;
    while (j1 < b.size() && digit(b[j1])) ++j1;
    if (i1 - i0 != j1 - j0) return i1 - i0 < j1 - j0;
    const int c = a.compare(i0, i1 - i0, b, j0, j1 - j0);
    if (c != 0) return c < 0;
    if (i1 - i != j1 - j) return i1 - i < j1 - j;  // equal values: fewer leading zeros first
    i = i1, j = j1;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

std::vector<std::string> list_run_dirs(const std::string& root) {
  std::vector<std::string> out;
  if (is_run_dir(root)) return {root};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory(ec)) continue;
    if (is_run_dir(e.path().string())) {
      out.push_back(e.path().string());
      continue;
    }
    std::error_code ec2;  // a folder of runs (runs/<name>/rank<k>): its runs, one level down only
    for (const auto& sub : fs::directory_iterator(e.path(), ec2))
      if (sub.is_directory(ec2) && is_run_dir(sub.path().string())) out.push_back(sub.path().string());
  }
  std::sort(out.begin(), out.end(), natural_less);
  return out;
}

}  // namespace hg::viewer
