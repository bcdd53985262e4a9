#include "framework/train/live_control.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace hg::train {

const std::vector<std::string>& live_recipes() {
  static const std::vector<std::string> recipes = {"fp32",        "fp16_naive",  "master_weights", "static_scale",
                                                   "dynamic_scale", "amp_f16",   "amp_bf16",       "fp8_current",
                                                   "fp8_delayed", "fp8_block",   "fp8_mx"};
  return recipes;
}

const std::vector<std::string>& live_models() {
  static const std::vector<std::string> models = {"mlp", "smallcnn", "gpt"};
  return models;
}

namespace {

ParsedCommand refuse(std::string why) { return {std::nullopt, std::move(why)}; }

bool is_recipe(const std::string& r) {
  const auto& all = live_recipes();
  return std::find(all.begin(), all.end(), r) != all.end();
}

std::string recipe_list() {
  std::string s;
  for (const auto& r : live_recipes()) s += (s.empty() ? "" : ", ") + r;
  return s;
}

// A JSON number that is a whole number in [lo, hi]; "" or why not.
std::string whole_problem(const nlohmann::json& v, const char* field, int64_t lo, int64_t hi) {
  if (!v.is_number()) return std::string(field) + ": " + v.dump() + " is not a number";
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d) || d < double(lo) || d > double(hi))
    return std::string(field) + ": " + v.dump() + " is not a whole number in " + std::to_string(lo) + " .. " +
           std::to_string(hi);
  return "";
}

// The fields a command may have besides "cmd" and "at".
std::string unknown_field(const nlohmann::json& j, const std::vector<std::string>& allowed) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "cmd" || it.key() == "at") continue;
    if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
      return "unknown field \"" + it.key() + "\"";
  }
  return "";
}

// A loss scale from "log2" or "value": a power of two 2^-126 .. 2^127 (multiplying by a power
// of two is exact, so S·g / S gives g back bit for bit whenever S·g stays in range).
std::string loss_scale_problem(const nlohmann::json& j, double& scale, int& log2) {
  if (j.contains("log2") == j.contains("value")) return "give \"log2\" or \"value\" (one of them)";
  if (j.contains("log2")) {
    const std::string why = whole_problem(j["log2"], "log2", kMinLog2Scale, kMaxLog2Scale);
    if (!why.empty()) return why;
    log2 = j["log2"].get<int>();
  } else {
    const nlohmann::json& v = j["value"];
    if (!v.is_number()) return "value " + v.dump() + " is not a number";
    const double d = v.get<double>();
    int e = 0;
    if (!std::isfinite(d) || d <= 0 || std::frexp(d, &e) != 0.5 || e - 1 < kMinLog2Scale || e - 1 > kMaxLog2Scale)
      return "value " + v.dump() + " is not a power of two in 2^-126 .. 2^127";
    log2 = e - 1;
  }
  scale = std::ldexp(1.0, log2);
  return "";
}

}  // namespace

ParsedCommand parse_command(const nlohmann::json& j) {
  if (!j.is_object()) return refuse("a command is a JSON object, not " + j.dump());
  if (!j.contains("cmd") || !j["cmd"].is_string()) return refuse("no \"cmd\" (a string)");
  const std::string cmd = j["cmd"].get<std::string>();
  Command c;
  if (j.contains("at")) {
    const std::string why = whole_problem(j["at"], "at", 0, kMaxAtStep);
    if (!why.empty()) return refuse(cmd + ": " + why);
    c.at = j["at"].get<int64_t>();
  }
  std::string why;
  if (cmd == "pause" || cmd == "resume" || cmd == "stop") {
    c.kind = cmd == "pause" ? CommandKind::Pause : cmd == "resume" ? CommandKind::Resume : CommandKind::Stop;
    why = unknown_field(j, {});
    c.json = {{"cmd", cmd}};
  } else if (cmd == "step") {
    c.kind = CommandKind::Step;
    why = unknown_field(j, {"n"});
    if (why.empty()) why = j.contains("n") ? whole_problem(j["n"], "n", 1, kMaxStepsAtOnce) : "";
    c.count = j.contains("n") && why.empty() ? j["n"].get<int64_t>() : 1;
    c.json = {{"cmd", cmd}, {"n", c.count}};
  } else if (cmd == "branch") {
    c.kind = CommandKind::Branch;
    why = unknown_field(j, {"recipe"});
    if (why.empty() && !(j.contains("recipe") && j["recipe"].is_string() && is_recipe(j["recipe"].get<std::string>())))
      why = "recipe: " + (j.contains("recipe") ? j["recipe"].dump() : std::string("missing")) + " is not one of " +
            recipe_list();
    if (why.empty()) c.recipe = j["recipe"].get<std::string>();
    c.json = {{"cmd", cmd}, {"recipe", c.recipe}};
  } else if (cmd == "set") {
    if (!j.contains("key") || !j["key"].is_string()) return refuse("set: no \"key\" (a string)");
    const std::string key = j["key"].get<std::string>();
    if (key == "loss_scale") {
      c.kind = CommandKind::SetLossScale;
      why = unknown_field(j, {"key", "log2", "value"});
      int log2 = 0;
      if (why.empty()) why = loss_scale_problem(j, c.value, log2);
      c.json = {{"cmd", cmd}, {"key", key}, {"log2", log2}};
    } else if (key == "growth_interval" || key == "lr" || key == "recipe") {
      why = unknown_field(j, {"key", "value"});
      if (why.empty() && !j.contains("value")) why = "no \"value\"";
      if (why.empty() && key == "growth_interval") {
        c.kind = CommandKind::SetGrowthInterval;
        why = whole_problem(j["value"], "value", 1, kMaxGrowthInterval);
        if (why.empty()) c.count = j["value"].get<int64_t>();
        c.json = {{"cmd", cmd}, {"key", key}, {"value", c.count}};
      } else if (why.empty() && key == "lr") {
        c.kind = CommandKind::SetLr;
        const nlohmann::json& v = j["value"];
        const double d = v.is_number() ? v.get<double>() : NAN;
        if (!(d > 0 && d <= kMaxLr)) why = "value " + v.dump() + " is not a learning rate in (0, 10]";
        c.value = d;
        c.json = {{"cmd", cmd}, {"key", key}, {"value", c.value}};
      } else if (why.empty()) {
        c.kind = CommandKind::SetRecipe;
        const nlohmann::json& v = j["value"];
        if (!(v.is_string() && is_recipe(v.get<std::string>())))
          why = "value " + v.dump() + " is not one of " + recipe_list();
        else c.recipe = v.get<std::string>();
        c.json = {{"cmd", cmd}, {"key", key}, {"value", c.recipe}};
      }
    } else {
      return refuse("set: unknown key \"" + key + "\" (loss_scale, growth_interval, lr, recipe)");
    }
    if (!why.empty()) return refuse("set " + key + ": " + why);
    return {c, ""};
  } else {
    return refuse("unknown command \"" + cmd + "\" (pause, resume, step, stop, set, branch)");
  }
  if (!why.empty()) return refuse(cmd + ": " + why);
  return {c, ""};
}

ParsedCommand parse_command_line(std::string_view line) {
  const nlohmann::json j = nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return refuse("not JSON: " + std::string(line.substr(0, 80)));
  return parse_command(j);
}

ParsedCommand parse_script_command(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  if (w.size() >= 2 && w[0] == "at" && w[1] == "step") w.erase(w.begin() + 1);  // "at step 200" reads as "at 200"
  if (w.size() < 3 || w[0] != "at") return refuse("expected \"at STEP COMMAND ...\"");
  nlohmann::json j;
  char* end = nullptr;
  const long long at = std::strtoll(w[1].c_str(), &end, 10);
  if (*end != '\0' || w[1].empty()) return refuse("at: \"" + w[1] + "\" is not a step number");
  j["at"] = at;
  j["cmd"] = w[2];
  const size_t args = w.size() - 3;
  // The number a word holds; a word that is none stays a string (and is refused by parse_command).
  auto number = [](const std::string& s) -> nlohmann::json {
    char* e = nullptr;
    const double d = std::strtod(s.c_str(), &e);
    return (*e == '\0' && !s.empty()) ? nlohmann::json(d) : nlohmann::json(s);
  };
  if (w[2] == "step" && args == 1) {
    j["n"] = number(w[3]);
  } else if (w[2] == "branch" && args == 1) {
    j["recipe"] = w[3];
  } else if (w[2] == "set" && args == 2) {
    j["key"] = w[3];
    const std::string& v = w[4];
    if (w[3] == "loss_scale" && v.rfind("2^", 0) == 0) j["log2"] = number(v.substr(2));
    else if (w[3] == "recipe") j["value"] = v;
    else j["value"] = number(v);
  } else if (args != 0) {
    return refuse("\"" + std::string(text) + "\": wrong number of words for " + w[2]);
  }
  return parse_command(j);
}

std::vector<Command> load_script(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the script");
  std::vector<Command> out;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = path + " line " + std::to_string(n) + ": ";
    if (line[first] == '{') {
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) throw std::runtime_error(where + "not a JSON object");
      if (j.contains("type")) {  // a run log's line: only the commands it applied
        if (j["type"] != "command" || !j.value("applied", false)) continue;
        if (!j.contains("command") || !j.contains("step") || !j["command"].is_object())
          throw std::runtime_error(where + "a command event without \"command\" and \"step\"");
        nlohmann::json c = j["command"];
        c["at"] = j["step"];
        const ParsedCommand p = parse_command(c);
        if (!p.command) throw std::runtime_error(where + p.refusal);
        out.push_back(*p.command);
        continue;
      }
      const ParsedCommand p = parse_command(j);
      if (!p.command) throw std::runtime_error(where + p.refusal);
      if (p.command->at < 0)
        throw std::runtime_error(where + "a script's command needs \"at\": the step it takes effect at");
      out.push_back(*p.command);
      continue;
    }
    std::string text = line.substr(0, line.find('#'));
    std::istringstream parts(text);
    for (std::string part; std::getline(parts, part, ';');) {
      if (part.find_first_not_of(" \t") == std::string::npos) continue;
      const ParsedCommand p = parse_script_command(part);
      if (!p.command) throw std::runtime_error(where + p.refusal);
      out.push_back(*p.command);
    }
  }
  if (in.bad()) throw std::runtime_error(path + ": read failed");
  std::stable_sort(out.begin(), out.end(), [](const Command& a, const Command& b) { return a.at < b.at; });
  return out;
}

std::vector<ControlChannel::Line> ControlChannel::read_new_lines() {
  std::vector<Line> lines;
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return lines;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return lines;
  }
  if (st.st_size < offset_) offset_ = line_number_ = 0;  // replaced or truncated: from its start
  std::string pending;
  bool skipping = false;  // inside a line longer than kMaxControlLineBytes
  char buf[65536];
  int64_t pos = offset_;
  for (;;) {
    const ssize_t got = ::pread(fd, buf, sizeof buf, pos);
    if (got <= 0) break;
    for (ssize_t i = 0; i < got; ++i) {
      if (buf[i] == '\n') {
        ++line_number_;
        offset_ = pos + i + 1;
        lines.push_back({line_number_, skipping ? std::string() : pending, skipping});
        pending.clear();
        skipping = false;
      } else if (!skipping) {
        pending.push_back(buf[i]);
        if (pending.size() > kMaxControlLineBytes) skipping = true, pending.clear();
      }
    }
    pos += got;
  }
  ::close(fd);
  return lines;
}

}  // namespace hg::train
