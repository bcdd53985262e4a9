// The live trainer (framework/train/live.h) and its control channel (live_control.h): every
// command applied and logged at the step it took effect, every bad one refused with a reason
// and the run going on, a script giving the same log twice and a replay of the log the same
// log again, a branch continuing its parent's run exactly, and a run killed mid-step leaving
// a folder a reader takes whole. Tiny data (a synthetic 28×28 set of 256 images, batch 32).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "datasets/synthetic.h"
#include "datasets/text.h"
#include "framework/io/run_log.h"
#include "framework/tensor/device.h"
#include "framework/train/live.h"

namespace fs = std::filesystem;
using hg::train::Command;
using hg::train::LiveConfig;
using hg::train::LiveTrainer;

extern char** environ;

namespace {

// A folder of its own, removed however the test ends.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "hg_live_XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

hg::train::FashionMnist tiny_data() {
  hg::train::FashionMnist d;
  hg::data::SyntheticOptions o;
  o.num_classes = 10, o.height = 28, o.width = 28;
  o.n = 256, o.seed = 1;
  d.train = hg::data::make_synthetic(o);
  o.n = 64, o.seed = 2;
  d.test = hg::data::make_synthetic(o);
  return d;
}

LiveConfig tiny_config() {
  LiveConfig c;
  c.batch_size = 32;
  c.stats_every = 2;
  c.eval_every = 10;
  return c;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<nlohmann::json> events_of(const std::string& dir, const std::string& type) {
  std::vector<nlohmann::json> out;
  for (const auto& e : hg::io::read_events(dir + "/events.jsonl").events)
    if (e["type"] == type) out.push_back(e);
  return out;
}

// One live run in `dir` with `script` (a text script) and `control` (control.jsonl's lines).
int run_live(const std::string& dir, const LiveConfig& cfg, const std::string& script, const std::string& control = "",
             const hg::train::BranchStarter& branch = {}) {
  static const hg::train::FashionMnist data = tiny_data();
  hg::io::RunLog log(dir, {{"lesson", "live"}, {"seed", cfg.seed}});
  write_file(dir + "/control.jsonl", control);
  std::vector<Command> commands;
  if (!script.empty()) {
    write_file(dir + "/script.txt", script);
    commands = hg::train::load_script(dir + "/script.txt");
  }
  hg::train::ControlChannel channel(dir + "/control.jsonl");
  LiveTrainer t(data, cfg, log, "");
  return t.run(commands, channel, branch);
}

// Every command, every recipe in turn, pause and step while paused, stop.
const char* kEveryCommand =
    "# every command once\n"
    "at 0 set lr 0.02\n"
    "at 2 set recipe fp16_naive; at 4 set recipe master_weights\n"
    "at 5 set loss_scale 2^4\n"
    "at 6 set recipe static_scale\n"
    "at step 7 set loss_scale 2^6\n"
    "at 8 set recipe dynamic_scale; at 8 set growth_interval 3\n"
    "at 12 set recipe amp_f16\n"
    "at 13 set loss_scale 0.25\n"
    "at 14 set recipe amp_bf16\n"
    "at 16 pause\n"
    "at 16 step 2\n"
    "at 18 resume\n"
    "at 20 stop\n";

}  // namespace

TEST_CASE("live: script commands parse in every form, and bad ones say why") {
  auto ok = [](const char* text) {
    const auto p = hg::train::parse_script_command(text);
    INFO(text << " -> " << p.refusal);
    REQUIRE(p.command);
    return *p.command;
  };
  CHECK(ok("at 200 set loss_scale 2^-4").value == std::ldexp(1.0, -4));
  CHECK(ok("at 200 set loss_scale 2^-4").json == nlohmann::json{{"cmd", "set"}, {"key", "loss_scale"}, {"log2", -4}});
  CHECK(ok("at 3 set loss_scale 65536").json["log2"] == 16);  // a value and its log2: one form in the log
  CHECK(ok("at step 400 set recipe amp_bf16").recipe == "amp_bf16");
  CHECK(ok("at 400 set recipe amp_bf16").at == 400);
  CHECK(ok("at 5 step 3").count == 3);
  CHECK(ok("at 5 branch amp_f16").kind == hg::train::CommandKind::Branch);
  CHECK(ok("at 0 set growth_interval 20").count == 20);
  auto refused = [](const char* text, const char* words) {
    const auto p = hg::train::parse_script_command(text);
    INFO(text);
    REQUIRE_FALSE(p.command);
    INFO(p.refusal);
    CHECK(p.refusal.find(words) != std::string::npos);
  };
  refused("at 5 fly", "unknown command");
  refused("at -1 pause", "at");
  refused("at x pause", "not a step number");
  refused("at 5 set loss_scale 3", "power of two");
  refused("at 5 set loss_scale 0", "power of two");
  refused("at 5 set loss_scale -4", "power of two");
  refused("at 5 set loss_scale nan", "power of two");
  refused("at 5 set loss_scale 2^200", "log2");
  refused("at 5 set loss_scale 2^0.5", "log2");
  refused("at 5 set lr 0", "learning rate");
  refused("at 5 set lr inf", "learning rate");
  refused("at 5 set growth_interval 0", "growth_interval");
  refused("at 5 set recipe fp64", "fp64");
  refused("at 5 set speed 3", "unknown key");
  refused("at 5 step 0", "n");
  refused("at 5 step 2000000", "n");
  refused("at 5 branch", "recipe");
  refused("pause", "expected");
  // JSON: NaN as a number (parse_command is given one) and as text (not JSON at all).
  CHECK_FALSE(hg::train::parse_command({{"cmd", "set"}, {"key", "lr"}, {"value", NAN}}).command);
  CHECK_FALSE(hg::train::parse_command({{"cmd", "set"}, {"key", "loss_scale"}, {"value", NAN}}).command);
  CHECK(hg::train::parse_command_line(R"({"cmd":"set","key":"lr","value":NaN})").refusal.find("not JSON") == 0);
  CHECK(hg::train::parse_command_line(R"({"cmd":"pause","vaule":1})").refusal.find("vaule") != std::string::npos);
}

TEST_CASE("live: control.jsonl is read in whole lines, from where the last read stopped") {
  TempDir tmp;
  const std::string path = tmp.path + "/control.jsonl";
  hg::train::ControlChannel c(path);
  CHECK(c.read_new_lines().empty());  // no file yet
  write_file(path, "{\"cmd\":\"pause\"}\n{\"cmd\":\"res");
  auto lines = c.read_new_lines();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].text == R"({"cmd":"pause"})");
  CHECK(lines[0].number == 1);
  std::ofstream(path, std::ios::app) << "ume\"}\n";
  lines = c.read_new_lines();
  REQUIRE(lines.size() == 1);  // the half line, completed: read once, whole
  CHECK(lines[0].text == R"({"cmd":"resume"})");
  CHECK(lines[0].number == 2);
  CHECK(c.read_new_lines().empty());
  std::ofstream(path, std::ios::app) << std::string(hg::train::kMaxControlLineBytes + 10, 'x') << "\n{\"cmd\":\"stop\"}\n";
  lines = c.read_new_lines();
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].too_long);
  CHECK(lines[1].text == R"({"cmd":"stop"})");
}

TEST_CASE("live: every command is applied and logged at the step it took effect") {
  TempDir tmp;
  const std::string dir = tmp.path + "/run";
  std::vector<std::string> branches;
  LiveConfig cfg = tiny_config();
  const std::string control = R"({"cmd":"branch","recipe":"amp_bf16","at":3})" "\n";
  REQUIRE(run_live(dir, cfg, kEveryCommand, control,
                   [&](const std::string& ckpt, const std::string& recipe, const std::string& name) {
                     branches.push_back(ckpt + " " + recipe + " " + name);
                     return std::string();
                   }) == 0);
  const auto commands = events_of(dir, "command");
  std::vector<std::pair<int64_t, std::string>> applied;
  for (const auto& e : commands) {
    INFO(e.dump());
    CHECK(e["applied"] == true);
    const nlohmann::json& c = e["command"];
    applied.push_back({e["step"].get<int64_t>(),
                       c["cmd"].get<std::string>() + (c.contains("key") ? " " + c["key"].get<std::string>() : "")});
  }
  const std::vector<std::pair<int64_t, std::string>> expected = {
      {0, "set lr"}, {2, "set recipe"}, {3, "branch"}, {4, "set recipe"}, {5, "set loss_scale"}, {6, "set recipe"},
      {7, "set loss_scale"}, {8, "set recipe"}, {8, "set growth_interval"}, {12, "set recipe"},
      {13, "set loss_scale"}, {14, "set recipe"}, {16, "pause"}, {16, "step"}, {18, "resume"}, {20, "stop"}};
  CHECK(applied == expected);
  // The branch: a checkpoint in the run folder, the starter called with it.
  REQUIRE(branches.size() == 1);
  CHECK(branches[0] == dir + "/branch_3.ckpt amp_bf16 run_b3");
  CHECK(fs::exists(dir + "/branch_3.ckpt"));
  // What the commands did: the loss scale each step ran with, the recipe's histograms.
  std::map<int64_t, double> scale;
  for (const auto& e : events_of(dir, "loss_scale")) scale[e["step"]] = e["scale"].get<double>();
  CHECK(scale.count(5) == 0);             // master_weights: no scale
  CHECK(scale.at(6) == 16.0);             // static_scale at the scale set under master_weights
  CHECK(scale.at(7) == 64.0);             // set loss_scale 2^6
  CHECK(scale.at(8) == 64.0);             // the GradScaler starts where the run's scale is
  CHECK(scale.at(13) == 0.25);            // set loss_scale 0.25 on amp_f16's scaler
  CHECK(scale.count(14) == 0);            // amp_bf16: none
  for (int64_t s = 8; s < 12; ++s) CHECK(scale.count(s) == 1);
  int64_t last_step = -1;
  for (const auto& e : events_of(dir, "scalar"))
    if (e["name"] == "train/loss") last_step = std::max<int64_t>(last_step, e["step"]);
  CHECK(last_step == 19);  // 20 steps, 0 .. 19, then stop at 20 (the pause ran 2 steps by "step 2")
  CHECK(events_of(dir, "grad_hist").size() == 10 * 6);  // every 2 steps, 6 parameters
  CHECK(events_of(dir, "memory").size() == 10);
  CHECK(events_of(dir, "end").at(0)["status"] == "finished");
}

TEST_CASE("live: bad commands are refused with a reason, and the run goes on") {
  TempDir tmp;
  const std::string dir = tmp.path + "/run";
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"not json at all", "not JSON"},
      {R"({"cmd":"set","key":"loss_scale","value":NaN})", "not JSON"},
      {R"({"cmd":"fly"})", "unknown command"},
      {R"({"cmd":"set","key":"loss_scale","value":"nan"})", "not a number"},
      {R"({"cmd":"set","key":"loss_scale","value":-8})", "power of two"},
      {R"({"cmd":"set","key":"loss_scale","value":0})", "power of two"},
      {R"({"cmd":"set","key":"loss_scale","log2":128})", "log2"},
      {R"({"cmd":"set","key":"lr","value":-1})", "learning rate"},
      {R"({"cmd":"set","key":"recipe","value":"fp64"})", "fp64"},
      {R"({"cmd":"step","n":3})", "not paused"},
      {R"({"cmd":"resume"})", "not paused"},
      {R"({"cmd":"pause","at":-2})", "at"},
      {R"({"cmd":"set","key":"recipe","value":"fp32"})", "already"},
      {R"({"cmd":"branch","recipe":"fp32"})", "cannot start"},
      {R"([1,2])", "JSON object"},
      {std::string(hg::train::kMaxControlLineBytes + 1, 'x'), "longer than"},
  };
  std::string control;
  for (const auto& [line, why] : bad) control += line + "\n";
  LiveConfig cfg = tiny_config();
  cfg.max_steps = 4;
  REQUIRE(run_live(dir, cfg, "", control) == 0);
  const auto commands = events_of(dir, "command");
  REQUIRE(commands.size() == bad.size());
  for (size_t i = 0; i < bad.size(); ++i) {
    INFO(commands[i].dump());
    CHECK(commands[i]["applied"] == false);
    CHECK(commands[i]["step"] == 0);
    CHECK(commands[i]["source"] == "control.jsonl line " + std::to_string(i + 1));
    CHECK(commands[i]["reason"].get<std::string>().find(bad[i].second) != std::string::npos);
  }
  CHECK(events_of(dir, "end").at(0)["status"] == "finished");  // 4 steps all the same
  int64_t losses = 0;
  for (const auto& e : events_of(dir, "scalar")) losses += e["name"] == "train/loss";
  CHECK(losses == 4);
}

TEST_CASE("live: a step that has passed is refused, except by stop") {
  TempDir tmp;
  static const hg::train::FashionMnist data = tiny_data();
  hg::io::RunLog log(tmp.path + "/run", {{"lesson", "live"}});
  LiveConfig cfg = tiny_config();
  cfg.max_steps = 3;
  LiveTrainer t(data, cfg, log);
  hg::train::ControlChannel none(tmp.path + "/run/control.jsonl");
  REQUIRE(t.run({}, none, {}) == 0);
  const auto p = hg::train::parse_script_command("at 1 set lr 0.01");
  REQUIRE(p.command);
  CHECK(t.apply(*p.command, "test").find("has passed") != std::string::npos);
  CHECK(t.config().lr == 0.05);  // unchanged
  // Except a stop: a parent ending its branches at its own last step finds a branch ahead of it.
  const auto stop = hg::train::parse_script_command("at 1 stop");
  REQUIRE(stop.command);
  CHECK(t.apply(*stop.command, "test") == "");
}

TEST_CASE("live: a script gives the same log twice, and the log replays to the same log") {
  TempDir tmp;
  LiveConfig cfg = tiny_config();
  REQUIRE(run_live(tmp.path + "/a", cfg, kEveryCommand) == 0);
  REQUIRE(run_live(tmp.path + "/b", cfg, kEveryCommand) == 0);
  const std::string a = read_file(tmp.path + "/a/events.jsonl");
  CHECK(a.size() > 10000);
  CHECK(a == read_file(tmp.path + "/b/events.jsonl"));  // no timestamps in events: every byte
  // The replay: the run's own events.jsonl as the script (its applied commands, at their steps).
  static const hg::train::FashionMnist data = tiny_data();
  const std::string c = tmp.path + "/c";
  {
    hg::io::RunLog log(c, {{"lesson", "live"}});
    hg::train::ControlChannel channel(c + "/control.jsonl");
    LiveTrainer t(data, cfg, log);
    REQUIRE(t.run(hg::train::load_script(tmp.path + "/a/events.jsonl"), channel, {}) == 0);
  }
  CHECK(a == read_file(c + "/events.jsonl"));
  // Another seed: another log (the comparison can fail).
  cfg.seed = 7;
  REQUIRE(run_live(tmp.path + "/d", cfg, kEveryCommand) == 0);
  CHECK(a != read_file(tmp.path + "/d/events.jsonl"));
}

TEST_CASE("live: a branch in its parent's recipe goes on bit for bit, momentum and scaler included") {
  // The branch's steps must be its parent's: the same weights, batches, momentum (0.9) and
  // GradScaler (a growth interval of 3, so its count of good steps matters), in each kind of
  // optimizer state: F32 momentum on masters, fp16_naive's F16 momentum, FP8 and autocast.
  static const hg::train::FashionMnist data = tiny_data();
  for (const char* recipe : {"dynamic_scale", "fp16_naive", "fp8_current", "amp_f16"}) {
    INFO(recipe);
    TempDir tmp;
    LiveConfig cfg = tiny_config();
    cfg.recipe = recipe;
    cfg.log2_scale = 4;
    cfg.growth_interval = 3;
    cfg.max_steps = 11;
    std::string ckpt;
    REQUIRE(run_live(tmp.path + "/p", cfg, std::string("at 5 set lr 0.03\nat 7 branch ") + recipe + "\n", "",
                     [&](const std::string& path, const std::string&, const std::string&) {
                       ckpt = path;
                       return std::string();
                     }) == 0);
    REQUIRE(!ckpt.empty());
    {
      hg::io::RunLog log(tmp.path + "/b", {{"lesson", "live"}});
      hg::train::ControlChannel channel(tmp.path + "/b/control.jsonl");
      LiveConfig bc = cfg;
      bc.lr = 0.5;  // the checkpoint's 0.03 wins
      LiveTrainer t(data, bc, log, ckpt);
      CHECK(t.step() == 7);
      CHECK(t.config().lr == 0.03);
      REQUIRE(t.run({}, channel, {}) == 0);
    }
    // Every loss, loss scale, gradient histogram and FP8 cast from step 7 on, as JSON.
    auto from_7 = [&](const std::string& dir) {
      std::vector<nlohmann::json> out;
      for (const auto& e : hg::io::read_events(dir + "/events.jsonl").events)
        if (e["type"] != "command" && e["type"] != "note" && e["type"] != "memory" && e["type"] != "end" &&
            e.contains("step") && e["step"] >= 7)
          out.push_back(e);
      return out;
    };
    const auto parent = from_7(tmp.path + "/p"), branch = from_7(tmp.path + "/b");
    CHECK(parent.size() >= 4 + 2 * 6);  // 4 steps' losses, 6 histograms at steps 8 and 10, and more
    REQUIRE(branch.size() == parent.size());
    for (size_t i = 0; i < parent.size(); ++i) {
      INFO(parent[i].dump());
      CHECK(branch[i] == parent[i]);
    }
  }
}

TEST_CASE("live: a recipe change carries the momentum and, between two GradScalers, the scaler") {
  // master_weights, static_scale at S = 1 and dynamic_scale at S = 1 compute the same bits: a
  // run that passes through all three must give the losses of one that stays, if the momentum
  // goes along (started afresh, step 3 would be a plain SGD step and the losses would part).
  TempDir tmp;
  LiveConfig cfg = tiny_config();
  cfg.recipe = "master_weights";
  cfg.log2_scale = 0;
  cfg.growth_interval = 1000000;
  cfg.max_steps = 7;
  auto losses = [&](const std::string& dir) {
    std::vector<double> v;
    for (const auto& e : events_of(dir, "scalar"))
      if (e["name"] == "train/loss") v.push_back(e["value"].get<double>());
    return v;
  };
  REQUIRE(run_live(tmp.path + "/stays", cfg, "") == 0);
  REQUIRE(run_live(tmp.path + "/moves", cfg,
                   "at 2 set recipe static_scale; at 3 set recipe dynamic_scale; at 5 set recipe master_weights\n") == 0);
  CHECK(losses(tmp.path + "/stays").size() == 7);
  CHECK(losses(tmp.path + "/stays") == losses(tmp.path + "/moves"));
  // dynamic_scale -> amp_f16 after 2 good steps of 3: the third, the first under amp_f16,
  // doubles S (a new scaler would count from 0 and double it 3 steps later).
  cfg.recipe = "dynamic_scale";
  cfg.growth_interval = 3;
  cfg.max_steps = 5;
  REQUIRE(run_live(tmp.path + "/scaler", cfg, "at 2 set recipe amp_f16\n") == 0);
  std::map<int64_t, double> scale;
  for (const auto& e : events_of(tmp.path + "/scaler", "loss_scale")) scale[e["step"]] = e["scale"].get<double>();
  CHECK(scale.at(2) == 1.0);
  CHECK(scale.at(3) == 2.0);
}

TEST_CASE("live: the SmallCNN trains in every recipe, with its gradients and memory, the same twice") {
  // Each recipe for one step, histograms every step: what the MLP logs, for the CNN's 8 tensors.
  TempDir tmp;
  LiveConfig cfg = tiny_config();
  cfg.model = "smallcnn";
  cfg.batch_size = 16;
  cfg.stats_every = 1;
  cfg.eval_every = 0;
  const std::string every_recipe =
      "at 0 set loss_scale 2^8; at 1 set recipe fp16_naive; at 2 set recipe master_weights\n"
      "at 3 set recipe static_scale; at 4 set recipe dynamic_scale; at 5 set recipe amp_f16\n"
      "at 6 set recipe amp_bf16; at 7 branch fp16_naive; at 8 stop\n";
  std::string ckpt;
  const hg::train::BranchStarter keep = [&](const std::string& path, const std::string&, const std::string&) {
    ckpt = path;
    return std::string();
  };
  REQUIRE(run_live(tmp.path + "/a", cfg, every_recipe, "", keep) == 0);
  for (const auto& e : events_of(tmp.path + "/a", "command")) CHECK(e["applied"] == true);
  int64_t losses = 0;
  for (const auto& e : events_of(tmp.path + "/a", "scalar")) {
    INFO(e.dump());
    CHECK(std::isfinite(e["value"].get<double>()));
    losses += e["name"] == "train/loss";
  }
  CHECK(losses == 8);
  const auto hists = events_of(tmp.path + "/a", "grad_hist");
  REQUIRE(hists.size() == 8 * 8);  // conv1, conv2, fc1, fc2: weight and bias, every step
  std::map<int64_t, int64_t> nonzero;  // per step: values that are not zero, over every tensor
  for (const auto& h : hists) nonzero[h["step"]] += h["total"].get<int64_t>() - h["zeros"].get<int64_t>();
  CHECK(hists[0]["param"] == "conv1.weight");
  for (int64_t s = 0; s < 8; ++s) CHECK(nonzero[s] > 0);  // every recipe's backward reached the convolutions
  CHECK(events_of(tmp.path + "/a", "memory").size() == 8);
  CHECK(events_of(tmp.path + "/a", "loss_scale").size() == 3);  // static_scale, dynamic_scale, amp_f16
  REQUIRE(run_live(tmp.path + "/b", cfg, every_recipe, "", keep) == 0);
  std::string a = read_file(tmp.path + "/a/events.jsonl");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{tmp.path + "/a/", tmp.path + "/b/"}, {"a_b7", "b_b7"}})
    for (size_t at = a.find(from); at != std::string::npos; at = a.find(from, at + to.size())) a.replace(at, from.size(), to);
  CHECK(a == read_file(tmp.path + "/b/events.jsonl"));  // the branch's folder named apart
  // The branch's checkpoint is the CNN's: an MLP run refuses it, naming the model.
  static const hg::train::FashionMnist data = tiny_data();
  REQUIRE(!ckpt.empty());
  hg::io::RunLog log(tmp.path + "/c", {{"lesson", "live"}});
  LiveConfig mlp = cfg;
  mlp.model = "mlp";
  CHECK_THROWS_WITH_AS(LiveTrainer(data, mlp, log, ckpt), doctest::Contains("smallcnn"), std::runtime_error);
  LiveTrainer t(data, cfg, log, ckpt);
  CHECK(t.step() == 7);
}

TEST_CASE("live: chapter 14's FP8 recipes train the MLP and log every cast, the same twice") {
  TempDir tmp;
  LiveConfig cfg = tiny_config();
  cfg.eval_every = 4;  // evaluation runs the FP8 model too (and leaves delayed scaling's history alone)
  const std::string script =
      "at 1 set recipe fp8_current; at 3 set recipe fp8_delayed; at 5 set recipe fp8_block\n"
      "at 7 set recipe fp8_mx; at 9 set recipe amp_bf16; at 10 stop\n";
  REQUIRE(run_live(tmp.path + "/a", cfg, script) == 0);
  for (const auto& e : events_of(tmp.path + "/a", "command")) CHECK(e["applied"] == true);
  std::map<int64_t, std::vector<std::string>> casts;  // step -> the tensors cast to FP8
  for (const auto& e : events_of(tmp.path + "/a", "fp8_scale")) {
    INFO(e.dump());
    CHECK(std::isfinite(e["amax"].get<double>()));
    casts[e["step"]].push_back(e["tensor"]);
  }
  const std::vector<std::string> nine = {"fc1.x", "fc1.w", "fc1.dy", "fc2.x", "fc2.w", "fc2.dy",
                                         "fc3.x", "fc3.w", "fc3.dy"};
  CHECK(casts.size() == 8);  // steps 1 .. 8: none in fp32 (0) or amp_bf16 (9)
  for (int64_t step = 1; step <= 8; ++step) CHECK(casts[step] == nine);
  for (const auto& e : events_of(tmp.path + "/a", "scalar")) CHECK(std::isfinite(e["value"].get<double>()));
  CHECK(events_of(tmp.path + "/a", "grad_hist").size() == 5 * 6);  // the histograms go on
  REQUIRE(run_live(tmp.path + "/b", cfg, script) == 0);
  CHECK(read_file(tmp.path + "/a/events.jsonl") == read_file(tmp.path + "/b/events.jsonl"));
}

TEST_CASE("live: a switch into FP8 and out again keeps the weights") {
  // FP8's model is another class (fp8/mlp.h): the switch copies the F32 weights across, both
  // ways, so four switches at one step leave the run where one that never switched is.
  TempDir tmp;
  LiveConfig cfg = tiny_config();
  cfg.max_steps = 6;
  auto losses = [&](const std::string& dir) {
    std::vector<double> v;
    for (const auto& e : events_of(dir, "scalar"))
      if (e["name"] == "train/loss") v.push_back(e["value"].get<double>());
    return v;
  };
  REQUIRE(run_live(tmp.path + "/plain", cfg, "") == 0);
  REQUIRE(run_live(tmp.path + "/there_and_back", cfg,
                   "at 3 set recipe fp8_delayed; at 3 set recipe master_weights; at 3 set recipe fp8_mx\n"
                   "at 3 set recipe fp32\n") == 0);
  CHECK(losses(tmp.path + "/plain").size() == 6);
  CHECK(losses(tmp.path + "/plain") == losses(tmp.path + "/there_and_back"));
  // The SmallCNN has no FP8 layers in chapter 14: refused, with the reason logged.
  cfg.model = "smallcnn";
  cfg.max_steps = 1;
  REQUIRE(run_live(tmp.path + "/cnn", cfg, "", R"({"cmd":"set","key":"recipe","value":"fp8_delayed"})" "\n"
                   R"({"cmd":"branch","recipe":"fp8_current"})" "\n") == 0);
  const auto refused = events_of(tmp.path + "/cnn", "command");
  REQUIRE(refused.size() == 2);
  for (const auto& e : refused) {
    INFO(e.dump());
    CHECK(e["applied"] == false);
    CHECK(e["reason"].get<std::string>().find("MLP") != std::string::npos);
  }
  static const hg::train::FashionMnist data = tiny_data();
  hg::io::RunLog log(tmp.path + "/cnn_fp8", {{"lesson", "live"}});
  cfg.recipe = "fp8_block";
  CHECK_THROWS_WITH_AS(LiveTrainer(data, cfg, log), doctest::Contains("MLP"), std::invalid_argument);
}

TEST_CASE("live: chapter 12's GPT trains in its three recipes, branches bit for bit, the same twice") {
  // A text of 40 repeated lines: enough windows of 33 characters in each split.
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the quick brown fox jumps over the lazy dog " + std::to_string(i % 7) + "\n";
  static const hg::data::TextCorpus corpus = hg::data::make_text_corpus(text, "test text", 32);
  TempDir tmp;
  LiveConfig cfg = tiny_config();
  cfg.model = "gpt";
  cfg.lr = 2e-3;
  cfg.batch_size = 4;
  cfg.eval_every = 3;
  cfg.growth_interval = 2;
  cfg.max_steps = 8;
  auto run = [&](const std::string& dir, const std::string& script, const std::string& control,
                 std::string* ckpt) {
    hg::io::RunLog log(dir, {{"lesson", "live"}});
    write_file(dir + "/control.jsonl", control);
    write_file(dir + "/script.txt", script);
    hg::train::ControlChannel channel(dir + "/control.jsonl");
    LiveTrainer t(corpus, cfg, log);
    return t.run(hg::train::load_script(dir + "/script.txt"), channel,
                 [&](const std::string& path, const std::string&, const std::string&) {
                   if (ckpt) *ckpt = path;
                   return std::string();
                 });
  };
  const std::string script = "at 2 set recipe amp_f16; at 4 branch amp_f16; at 5 set recipe amp_bf16\n";
  std::string ckpt;
  REQUIRE(run(tmp.path + "/a", script, R"({"cmd":"set","key":"recipe","value":"fp16_naive","at":1})" "\n", &ckpt) == 0);
  const auto commands = events_of(tmp.path + "/a", "command");
  REQUIRE(commands.size() == 4);
  CHECK(commands[0]["applied"] == false);  // fp16_naive: not one of chapter 12's recipes
  CHECK(commands[0]["reason"].get<std::string>().find("GPT") != std::string::npos);
  for (size_t i = 1; i < commands.size(); ++i) CHECK(commands[i]["applied"] == true);
  std::vector<int64_t> scaled;
  for (const auto& e : events_of(tmp.path + "/a", "loss_scale")) scaled.push_back(e["step"]);
  CHECK(scaled == std::vector<int64_t>{2, 3, 4});  // amp_f16's GradScaler
  int64_t losses = 0, val = 0;
  for (const auto& e : events_of(tmp.path + "/a", "scalar")) {
    INFO(e.dump());
    CHECK(std::isfinite(e["value"].get<double>()));
    losses += e["name"] == "train/loss";
    val += e["name"] == "val/loss";
  }
  CHECK(losses == 8);
  CHECK(val == 2);  // at steps 3 and 6
  CHECK(events_of(tmp.path + "/a", "grad_hist").size() > 4 * 10);  // every 2 steps, every tensor
  REQUIRE(run(tmp.path + "/b", script, R"({"cmd":"set","key":"recipe","value":"fp16_naive","at":1})" "\n", nullptr) == 0);
  std::string a = read_file(tmp.path + "/a/events.jsonl");
  for (const auto& [from, to] : {std::pair<std::string, std::string>{tmp.path + "/a/", tmp.path + "/b/"}, {"a_b4", "b_b4"}})
    for (size_t at = a.find(from); at != std::string::npos; at = a.find(from, at + to.size())) a.replace(at, from.size(), to);
  CHECK(a == read_file(tmp.path + "/b/events.jsonl"));  // the branch's folder named apart
  // The branch at step 4 in amp_f16 retraces the parent's step 4 (AdamW's moments and the
  // GradScaler's count included): the parent left amp_f16 after it.
  REQUIRE(!ckpt.empty());
  {
    hg::io::RunLog log(tmp.path + "/c", {{"lesson", "live"}});
    hg::train::ControlChannel channel(tmp.path + "/c/control.jsonl");
    LiveConfig bc = cfg;
    bc.recipe = "amp_f16";
    bc.max_steps = 5;
    LiveTrainer t(corpus, bc, log, ckpt);
    CHECK(t.step() == 4);
    REQUIRE(t.run({}, channel, {}) == 0);
  }
  auto at_4 = [&](const std::string& dir) {
    std::vector<nlohmann::json> out;
    for (const auto& e : hg::io::read_events(dir + "/events.jsonl").events)
      if ((e["type"] == "scalar" || e["type"] == "loss_scale" || e["type"] == "grad_hist") && e["step"] == 4)
        out.push_back(e);
    return out;
  };
  CHECK(at_4(tmp.path + "/a").size() > 10);
  CHECK(at_4(tmp.path + "/a") == at_4(tmp.path + "/c"));
}

#ifdef HG_LIVE_EXE
TEST_CASE("live: a run killed mid-training leaves a folder that reads whole") {
  TempDir tmp;
  std::vector<std::string> args = {HG_LIVE_EXE, "--run-name", "k", "--limit-train", "512", "--limit-test", "64",
                                   "--batch-size", "32", "--stats-every", "1", "--threads", "1", "--recipe",
                                   "dynamic_scale"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, tmp.path.c_str());
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, HG_LIVE_EXE, &fa, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  const std::string events = tmp.path + "/runs/k/events.jsonl";
  bool exited = false;
  for (int i = 0; i < 600 && !exited; ++i) {  // until it has logged 40 histograms (at most 60 s)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (fs::exists(events) && events_of(tmp.path + "/runs/k", "grad_hist").size() >= 40) break;
    exited = ::waitpid(pid, nullptr, WNOHANG) == pid;
  }
  REQUIRE_FALSE(exited);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  const auto log = hg::io::read_events(events);
  CHECK(log.corrupt_lines == 0);
  CHECK(log.events.size() >= 40);
  const auto run = hg::io::read_run_json(tmp.path + "/runs/k/run.json");
  CHECK(run["status"] == "running");  // it never got to say otherwise
  CHECK(fs::exists(tmp.path + "/runs/k/control.jsonl"));
}
#endif

#ifdef HG_LIVE_EXE
TEST_CASE("live: --device cuda without a GPU is one line and exit 2, before any run folder") {
  if (hg::cuda_available()) {
    MESSAGE("this build has CUDA and a GPU: --device cuda is not refused here");
    return;
  }
  TempDir tmp;
  std::vector<std::string> args = {HG_LIVE_EXE, "--device", "cuda", "--run-name", "gpu", "--steps", "1"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, tmp.path.c_str());
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  const std::string err = tmp.path + "/stderr.txt";
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  REQUIRE(posix_spawn(&pid, HG_LIVE_EXE, &fa, nullptr, argv.data(), environ) == 0);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  const std::string text = read_file(err);
  INFO(text);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK(text.rfind("halfgrad-live: --device cuda: ", 0) == 0);  // built without CUDA, or no GPU: says which
  CHECK(std::count(text.begin(), text.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(tmp.path + "/runs/gpu"));
}
#endif

TEST_CASE("live: the shipped demo scripts load") {
  int scripts = 0;
  for (const auto& e : fs::directory_iterator(std::string(HG_SOURCE_DIR) + "/docs/demos")) {
    if (e.path().extension() != ".txt") continue;
    INFO(e.path());
    const std::vector<Command> commands = hg::train::load_script(e.path().string());
    CHECK(commands.size() >= 3);
    CHECK(commands.back().kind == hg::train::CommandKind::Stop);  // a demo ends where it says
    ++scripts;
  }
  CHECK(scripts >= 3);
}
