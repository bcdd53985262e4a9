// The Lab panel: start a live training run and turn its knobs while it trains; the panel
// beside the knobs (Gradients, Loss scale or Memory) shows what the gradients do.
//
// Sections (grep for "----"):
//   following   the run's folder joins the runs once it exists; its branches too
//   state       what the run's log says: step, recipe, paused, loss scale, steps per second
//   knobs       start; pause, resume, step, stop; recipe, loss scale, growth interval, lr; branch
//   commands    the last commands and what became of them (applied, or refused and why)
//
// The knobs never change the run themselves: each appends one command to the run's
// control.jsonl (viewer/lab.h), and the run answers in its log. So a knob that moved and a
// command that was refused (a learning rate of 0) both show below, as the run saw them.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <imgui.h>

#include "framework/train/live_control.h"
#include "framework/version.h"
#include "viewer/app/app.h"
#include "viewer/app/widgets.h"

namespace hg::viewer {

namespace {

const std::vector<std::string>& recipes() { return hg::train::live_recipes(); }

// A combo over `names` (the recipes unless told otherwise); true when the choice changed.
bool combo(const char* label, int& index, const std::vector<std::string>& names = recipes()) {
  bool changed = false;
  if (ImGui::BeginCombo(label, names[size_t(index)].c_str())) {
    for (size_t i = 0; i < names.size(); ++i)
      if (ImGui::Selectable(names[i].c_str(), int(i) == index)) changed = int(i) != index, index = int(i);
    ImGui::EndCombo();
  }
  return changed;
}

void heading(const char* text) {
  ImGui::Separator();
  ImGui::TextDisabled("%s", text);
}

void send(App& app, const nlohmann::json& command) {
  const std::string why = app.lab.run.send(command);
  app.lab.message = why.empty() ? "sent " + command.dump() : why;
}

// ---- state ------------------------------------------------------------------------------
struct LiveState {
  const RunData* data = nullptr;
  int64_t step = -1;
  std::string model, recipe;
  bool paused = false;
  double scale = 0;  // the last logged loss scale (0: none yet, or a recipe without one)
  int64_t growth_interval = -1;  // from run.json's args and the commands applied since (-1: not said)
  double lr = -1;
};

LiveState live_state(const App& app) {
  LiveState s;
  if (!app.has_run(app.lab.run_index)) return s;
  const RunData& d = app.runs[app.lab.run_index].data();
  s.data = &d;
  s.step = d.max_step;
  if (d.run_json.is_object() && d.run_json.contains("model") && d.run_json["model"].is_string())
    s.model = d.run_json["model"];
  if (d.run_json.is_object() && d.run_json.contains("args") && d.run_json["args"].is_object()) {
    const nlohmann::json& a = d.run_json["args"];
    if (a.contains("recipe") && a["recipe"].is_string()) s.recipe = a["recipe"];
    if (a.contains("growth_interval") && a["growth_interval"].is_number_integer()) s.growth_interval = a["growth_interval"];
    if (a.contains("lr") && a["lr"].is_number()) s.lr = a["lr"];
  }
  for (const CommandEvent& c : d.commands) {
    if (!c.applied || !c.command.is_object()) continue;
    const std::string cmd = c.command.value("cmd", "");
    if (cmd == "pause") s.paused = true;
    if (cmd == "resume") s.paused = false;
    const std::string key = cmd == "set" ? c.command.value("key", "") : "";
    if (key == "recipe") s.recipe = c.command.value("value", s.recipe);
    if (key == "growth_interval") s.growth_interval = c.command.value("value", s.growth_interval);
    if (key == "lr") s.lr = c.command.value("value", s.lr);
  }
  if (!d.loss_scale.empty()) s.scale = d.loss_scale.back().scale;
  return s;
}

// Steps per second over the last second or more of the log's growth, as the panel sees it.
void measure_rate(LabState& lab, int64_t step) {
  const double now = ImGui::GetTime();
  if (lab.rate_step < 0 || step < lab.rate_step) lab.rate_step = step, lab.rate_time = now;
  if (now - lab.rate_time >= 1.0) {
    lab.steps_per_second = double(step - lab.rate_step) / (now - lab.rate_time);
    lab.rate_step = step, lab.rate_time = now;
  }
}

// ---- knobs ------------------------------------------------------------------------------
// A start from a branch checkpoint keeps the model of the run that saved it, whatever the
// model combo shows now; the recipe, scale and device are the ones chosen.
void start(App& app, std::vector<std::string> args, bool from_checkpoint = false) {
  LabState& lab = app.lab;
  if (!from_checkpoint) lab.run_model = lab.model;
  args.insert(args.end(), {"--model", hg::train::live_models()[size_t(lab.run_model)], "--recipe",
                           recipes()[size_t(lab.recipe)], "--log2-scale", std::to_string(lab.log2_scale)});
  if (lab.device == 1) args.insert(args.end(), {"--device", "cuda"});
  const std::string why = lab.run.start(lab.live_exe, args);
  lab.message = why.empty() ? "started " + lab.run.dir() : why;
  lab.run_index = -1, lab.branches.clear(), lab.rate_step = -1;
}

void draw_start(App& app) {
  LabState& lab = app.lab;
  ImGui::TextWrapped("Train one of chapter 02's models on FashionMNIST, or chapter 12's GPT on text, live, in "
                     "the recipes of chapters 06-11 and 14 (FP8).");
  combo("model##start", lab.model, hg::train::live_models());
  help_marker("mlp: 784-512-256-10, about 536k parameters (chapter 02). smallcnn: two 3x3 convolutions "
              "and two Linear layers, 422k parameters, several times slower per step. gpt: chapter 12's, "
              "2 blocks of width 64 on the fortunes, AdamW; fp32, amp_f16 and amp_bf16 only (docs/viewer.md).");
  combo("recipe##start", lab.recipe);
  if (hg::built_with_cuda()) {  // a build without CUDA has no GPU to offer
    static const std::vector<std::string> devices = {"cpu", "cuda"};
    combo("device##start", lab.device, devices);
    help_marker("cuda: the run on the GPU (halfgrad-live --device cuda); with no GPU it ends at once "
                "and says why. The FP8 recipes run on the CPU only.");
  }
  ImGui::SliderInt("log2 S##start", &lab.log2_scale, -24, 24, "S = 2^%d");
  if (ImGui::Button("Start", ImVec2(ImGui::GetContentRegionAvail().x, 0))) start(app, lab.args);
  help_marker("Starts halfgrad-live in a new folder runs/lab_<N> (never one that exists). The viewer "
              "only writes commands to its control.jsonl and reads its log (docs/run-log.md).");
  // A run that ended leaves its branch checkpoints: start again from one of them, in the recipe
  // chosen above (a run that diverged at step 180 can go on from step 100 in another recipe).
  if (!lab.run.started() || lab.run.running()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<std::pair<int64_t, std::string>> saved;  // (step, file)
  for (fs::directory_iterator it(lab.run.dir(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string f = it->path().filename().string();
    if (f.rfind("branch_", 0) == 0 && it->path().extension() == ".ckpt")
      saved.push_back({std::atoll(f.c_str() + 7), it->path().string()});
  }
  std::sort(saved.begin(), saved.end());
  for (const auto& [step, file] : saved) {
    ImGui::PushID(file.c_str());
    if (ImGui::Button(("Start from step " + std::to_string(step)).c_str())) start(app, {"--from", file}, /*from_checkpoint=*/true);
    ImGui::PopID();
  }
}

void draw_knobs(App& app, const LiveState& s) {
  LabState& lab = app.lab;
  const float w = ImGui::GetContentRegionAvail().x;
  if (s.paused) {
    if (ImGui::Button("Resume", ImVec2(w * 0.32f, 0))) send(app, {{"cmd", "resume"}});
  } else if (ImGui::Button("Pause", ImVec2(w * 0.32f, 0))) {
    send(app, {{"cmd", "pause"}});
  }
  ImGui::SameLine();
  ImGui::BeginDisabled(!s.paused);
  if (ImGui::Button("Step 1")) send(app, {{"cmd", "step"}, {"n", 1}});
  ImGui::SameLine();
  if (ImGui::Button("Step 10")) send(app, {{"cmd", "step"}, {"n", 10}});
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Stop")) send(app, {{"cmd", "stop"}});

  heading("precision");
  const auto it = std::find(recipes().begin(), recipes().end(), s.recipe);
  if (it != recipes().end()) lab.recipe = int(it - recipes().begin());  // as the log says
  if (combo("recipe", lab.recipe)) send(app, {{"cmd", "set"}, {"key", "recipe"}, {"value", recipes()[size_t(lab.recipe)]}});
  help_marker("fp32; fp16_naive (everything F16, chapter 06); master_weights (07); static_scale (08); "
              "dynamic_scale (09, GradScaler); amp_f16 (10, autocast + GradScaler); amp_bf16 (11); "
              "fp8_current, fp8_delayed, fp8_block, fp8_mx (14: the MLP's Linear layers in FP8; "
              "the FP8 panel shows their casts). The weights and the momentum carry over, and a GradScaler's state into another "
              "recipe with a GradScaler.");
  // A knob shows what the run's log says, except while it is being moved.
  if (!lab.editing[0] && s.scale > 0) lab.log2_scale = std::ilogb(s.scale);
  if (!lab.editing[1] && s.growth_interval > 0) lab.growth_interval = int(std::min<int64_t>(s.growth_interval, INT32_MAX));
  if (!lab.editing[2] && s.lr > 0) lab.lr = float(s.lr);
  ImGui::SliderInt("log2 S", &lab.log2_scale, -30, 30, "S = 2^%d");
  lab.editing[0] = ImGui::IsItemActive();
  if (ImGui::IsItemDeactivatedAfterEdit()) send(app, {{"cmd", "set"}, {"key", "loss_scale"}, {"log2", lab.log2_scale}});
  help_marker("The loss scale: static_scale's S, and the GradScaler's current S (dynamic_scale, "
              "amp_f16). Drag it down and watch the gradients slide under 2^-24 in the Gradients "
              "panel; up, and watch the steps that overflow get skipped.");
  if (ImGui::InputInt("growth interval", &lab.growth_interval, 10, 100, ImGuiInputTextFlags_EnterReturnsTrue))
    send(app, {{"cmd", "set"}, {"key", "growth_interval"}, {"value", lab.growth_interval}});
  lab.editing[1] = ImGui::IsItemActive();
  if (ImGui::InputFloat("lr", &lab.lr, 0, 0, "%.4g", ImGuiInputTextFlags_EnterReturnsTrue))
    send(app, {{"cmd", "set"}, {"key", "lr"}, {"value", double(lab.lr)}});
  lab.editing[2] = ImGui::IsItemActive();

  heading("compare");
  combo("##branch", lab.branch_recipe);
  ImGui::SameLine();
  if (ImGui::Button("Branch")) send(app, {{"cmd", "branch"}, {"recipe", recipes()[size_t(lab.branch_recipe)]}});
  help_marker("Saves the weights, the momentum and the GradScaler at this step and starts a second "
              "run from them in the recipe chosen here: the Loss-scale panel overlays the two from the "
              "same weights and batches.");
}

// ---- commands ---------------------------------------------------------------------------
// A command as a script would say it: "set loss_scale 2^-4", "set recipe amp_bf16", "step 10".
std::string command_text(const nlohmann::json& c) {
  std::string t = c.value("cmd", "?");
  if (c.contains("key")) t += " " + c["key"].dump();
  if (c.contains("log2")) t += " 2^" + c["log2"].dump();
  for (const char* k : {"value", "n", "recipe"})
    if (c.contains(k)) t += " " + (c[k].is_string() ? c[k].get<std::string>() : c[k].dump());
  t.erase(std::remove(t.begin(), t.end(), '"'), t.end());
  return t;
}

void draw_commands(const RunData& d) {
  heading("commands");
  const size_t shown = 10, first = d.commands.size() > shown ? d.commands.size() - shown : 0;
  for (size_t i = first; i < d.commands.size(); ++i) {
    const CommandEvent& c = d.commands[i];
    std::string what = c.command.is_object() ? command_text(c.command) : c.text;
    if (what.size() > 60) what = what.substr(0, 57) + "...";
    if (c.applied) {
      ImGui::Text("%lld  %s", static_cast<long long>(c.step), what.c_str());
    } else {
      ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(240, 110, 90, 255));
      ImGui::TextWrapped("%lld  refused: %s", static_cast<long long>(c.step), c.reason.c_str());
      ImGui::PopStyleColor();
    }
  }
  if (d.commands.empty()) ImGui::TextDisabled("none yet");
}

}  // namespace

// ---- following --------------------------------------------------------------------------
void follow_lab_run(App& app) {
  LabState& lab = app.lab;
  if (!lab.run.started()) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  auto join = [&](const std::string& dir) {  // its index, once its folder has a run.json
    if (!fs::exists(fs::path(dir) / "run.json", ec)) return -1;  // one stat a frame until then
    if (const int i = app.find_run(dir); i >= 0) return i;     // found already (under runs/)
    app.roots.push_back(dir);
    app.scan();
    return app.find_run(dir);
  };
  if (lab.run_index < 0 && (lab.run_index = join(lab.run.dir())) >= 0) {
    app.show_only(lab.run_index);
    app.fp8.run = lab.run_index;  // the FP8 panel shows its casts once an fp8_* recipe makes some
  }
  if (!app.has_run(lab.run_index)) return;
  // A branch's run folder is the parent's name and the step: runs/<name>_b<step> (live.h).
  for (const CommandEvent& c : app.runs[lab.run_index].data().commands) {
    if (!c.applied || !c.command.is_object() || c.command.value("cmd", "") != "branch") continue;
    const std::string dir = lab.run.dir() + "_b" + std::to_string(c.step);
    if (std::find(lab.branches.begin(), lab.branches.end(), dir) != lab.branches.end()) continue;
    const int i = join(dir);
    if (i >= 0) lab.branches.push_back(dir), app.runs[size_t(i)].overlay = true;
  }
}

void draw_lab_panel(App& app) {
  LabState& lab = app.lab;
  const float knobs_w = std::min(360.0f * app.ui_scale, ImGui::GetContentRegionAvail().x * 0.45f);
  ImGui::BeginChild("lab_knobs", ImVec2(knobs_w, 0), true);
  const bool running = lab.run.running();
  if (!lab.run.started()) {
    draw_start(app);
  } else {
    const LiveState s = live_state(app);
    ImGui::Text("%s", lab.run.dir().c_str());
    if (running) {
      measure_rate(lab, s.step);
      if (!s.data) ImGui::TextDisabled("starting (reading FashionMNIST) ...");
      else ImGui::Text("step %lld  %s  %s  %s", static_cast<long long>(std::max<int64_t>(s.step, 0)),
                       s.model.c_str(), s.recipe.c_str(), s.paused ? "PAUSED" : "training");
      if (s.data && !s.paused) ImGui::Text("%.1f steps/s", lab.steps_per_second);
      if (s.scale > 0) ImGui::Text("loss scale S = 2^%d", std::ilogb(s.scale));
      ImGui::Separator();
      draw_knobs(app, s);
    } else {
      ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(250, 170, 60, 255));
      ImGui::TextWrapped("The run ended: %s, at step %lld.", lab.run.ended().c_str(),
                         static_cast<long long>(std::max<int64_t>(s.step, 0)));
      ImGui::PopStyleColor();
      ImGui::Separator();
      draw_start(app);
    }
    if (s.data) draw_commands(*s.data);
  }
  if (!lab.message.empty()) ImGui::TextDisabled("%s", lab.message.c_str());
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("lab_view", ImVec2(0, 0), false);
  if (!app.presenter) {
    int v = lab.view == Panel::Scale ? 1 : lab.view == Panel::Memory ? 2 : lab.view == Panel::Fp8 ? 3 : 0;
    ImGui::RadioButton("Gradients", &v, 0);
    ImGui::SameLine();
    ImGui::RadioButton("Loss scale", &v, 1);
    ImGui::SameLine();
    ImGui::RadioButton("Memory", &v, 2);
    ImGui::SameLine();
    ImGui::RadioButton("FP8", &v, 3);  // the casts of an fp8_* recipe
    lab.view = v == 1 ? Panel::Scale : v == 2 ? Panel::Memory : v == 3 ? Panel::Fp8 : Panel::Gradients;
  }
  if (lab.view == Panel::Scale) draw_scale_panel(app);
  else if (lab.view == Panel::Memory) draw_memory_panel(app);
  else if (lab.view == Panel::Fp8) draw_fp8_panel(app);
  else draw_gradients_panel(app);
  ImGui::EndChild();
}

}  // namespace hg::viewer
