// The Runs panel: the run folders found, each one's run.json, and how reading it went.
// A run still being written is re-read four times a second (main.cpp), so new lines show up
// within a second; lines that could not be read are counted and listed, never fatal.
#include <string>

#include <algorithm>

#include <fmt/format.h>
#include <imgui.h>

#include "viewer/app/app.h"
#include "viewer/app/widgets.h"

namespace hg::viewer {

namespace {

const char* status_of(const RunSlot& slot) {
  const RunData& d = slot.data();
  if (!slot.reader->polled()) return slot.unloaded ? "unloaded" : "not read";
  if (!d.end_status.empty()) return d.end_status.c_str();
  if (d.run_json.is_object() && d.run_json.contains("status") && d.run_json["status"].is_string())
    return d.run_json["status"].get_ref<const std::string&>().c_str();
  return "running?";
}

// An object's keys and values as a tree. The reader keeps only objects nested at most
// kMaxRunJsonDepth deep in run_json (so the recursion is bounded); long values are cut.
void draw_json(const nlohmann::json& j) {
  if (!j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_object()) {
      if (ImGui::TreeNodeEx(it.key().c_str(), ImGuiTreeNodeFlags_DefaultOpen)) {
        draw_json(*it);
        ImGui::TreePop();
      }
      continue;
    }
    ImGui::TextDisabled("%s:", it.key().c_str());
    ImGui::SameLine();
    std::string v = it->is_string() ? it->get_ref<const std::string&>() : it->dump();
    if (v.size() > 300) v = v.substr(0, 300) + fmt::format(" ... ({} bytes)", v.size());
    ImGui::TextUnformatted(v.c_str());
  }
}

std::string bytes(int64_t n) {
  if (n >= 1000000) return fmt::format("{:.1f} MB", n / 1e6);
  if (n >= 1000) return fmt::format("{:.1f} kB", n / 1e3);
  return fmt::format("{} bytes", n);
}

void draw_counts(const RunSlot& slot) {
  const RunData& d = slot.data();
  const RunReader& r = *slot.reader;
  size_t n_scalars = 0, n_hists = 0, n_memory = 0, n_fp8 = 0;
  for (const auto& [k, v] : d.scalars) n_scalars += v.size();
  for (const auto& [k, v] : d.grads) n_hists += v.size();
  for (const auto& [k, v] : d.memory) n_memory += v.size();
  for (const auto& [k, v] : d.fp8) n_fp8 += v.points.size();
  ImGui::Text("events.jsonl: %s of %s read, %lld lines, %lld events",
              bytes(r.offset()).c_str(), bytes(r.file_size()).c_str(),
              static_cast<long long>(d.lines), static_cast<long long>(d.events));
  help_marker("The file is read from where the last read stopped, so a run that is still "
              "training shows new lines within a second.");
  ImGui::Text("%zu scalars (%zu names), %zu loss scales, %zu gradient histograms (%zu "
              "parameters), %zu memory points, %zu FP8 casts (%zu tensors), %zu notes; last step %lld",
              n_scalars, d.scalars.size(), d.loss_scale.size(), n_hists, d.params.size(), n_memory,
              n_fp8, d.fp8_tensors.size(), d.notes.size(), static_cast<long long>(d.max_step));
  ImVec4 warn(1.0f, 0.55f, 0.4f, 1.0f), ok(0.6f, 0.85f, 0.6f, 1.0f);
  ImGui::TextColored(d.corrupt_lines ? warn : ok, "corrupt lines: %lld",
                     static_cast<long long>(d.corrupt_lines));
  help_marker("Lines that are not JSON, not an object, lack a field their type needs, or hold "
              "a value of the wrong type or out of range (a negative count, a step beyond "
              "2^40 ...: docs/viewer.md, \"Bad input\"). They are skipped, never drawn, and "
              "counted; the first ones are listed below with their line numbers and why.");
  ImGui::SameLine();
  ImGui::TextColored(d.unknown_types ? warn : ok, "   unknown event types: %lld",
                     static_cast<long long>(d.unknown_types));
  help_marker("Valid lines whose \"type\" this viewer does not know (written by a newer "
              "halfgrad?). Skipped and counted.");
  ImGui::SameLine();
  ImGui::Text("   incomplete last line: %lld bytes", static_cast<long long>(d.pending_bytes));
  help_marker("A run being written may end in half a line: it is read once its end arrives.");
  if (d.restarts) ImGui::Text("the file was rewritten %lld times: read again from the start",
                              static_cast<long long>(d.restarts));
  if (d.replaced_points) {
    ImGui::Text("%lld points replaced by later lines for the same or an earlier step",
                static_cast<long long>(d.replaced_points));
    help_marker("A run resumed from an earlier checkpoint logs those steps again: the newer "
                "line wins, so each series shows what the run did last.");
  }
  for (const auto& p : d.problems) ImGui::BulletText("%s", p.c_str());
}

}  // namespace

void draw_runs_panel(App& app) {
  const float fs = ImGui::GetFontSize();
  ImGui::Checkbox("follow growing runs", &app.follow);
  help_marker("Re-read every run's events.jsonl four times a second and show what was "
              "appended. Untick to freeze the view.");
  ImGui::SameLine();
  ImGui::TextDisabled("   folders: ");
  for (const auto& r : app.roots) {
    ImGui::SameLine();
    ImGui::TextDisabled("%s", r.c_str());
  }
  if (app.runs.empty()) {
    ImGui::TextWrapped("No run folders found (a run folder holds run.json and/or events.jsonl). "
                       "Run a chapter, or write synthetic demo runs with: halfgrad-viewer "
                       "--make-demo-runs runs/");
    return;
  }
  if (!app.has_run(app.runs_selected)) app.runs_selected = 0;
  draw_budget_line(app);

  // The status column starts after the longest name, so a long name never runs into it.
  float name_w = fs * 10;
  for (const auto& r : app.runs) name_w = std::max(name_w, ImGui::CalcTextSize(r.data().name.c_str()).x);
  const float status_x = name_w + fs * 1.5f;
  ImGui::BeginChild("list", ImVec2(std::min(status_x + fs * 6, fs * 30), 0), true);
  // Only the rows in view are drawn (thousands of runs cost what a screenful does); their runs
  // are read as if shown, so each row can say how its run ended.
  ImGuiListClipper rows;
  rows.Begin(static_cast<int>(app.runs.size()));
  while (rows.Step()) {
    for (int i = rows.DisplayStart; i < rows.DisplayEnd; ++i) {
      const RunSlot& slot = app.runs[i];
      app.listed.push_back(i);
      ImGui::PushStyleColor(ImGuiCol_Text, slot.color);
      std::string label = fmt::format("{}##{}", slot.data().name, i);
      if (ImGui::Selectable(label.c_str(), app.runs_selected == i)) app.runs_selected = i;
      ImGui::PopStyleColor();
      ImGui::SameLine(status_x);
      ImGui::TextDisabled("%s%s", status_of(slot), run_problems(slot.data()).empty() ? "" : " !");
    }
  }
  ImGui::EndChild();
  ImGui::SameLine();

  ImGui::BeginChild("detail", ImVec2(0, 0), true);
  const RunSlot& slot = app.runs[app.runs_selected];
  const RunData& d = slot.data();
  ImGui::Text("%s", d.dir.c_str());
  synthetic_banner(d);
  run_problems_lines(d);
  ImGui::Separator();
  draw_counts(slot);
  ImGui::Separator();
  ImGui::TextUnformatted("run.json");
  help_marker("What ran: lesson, model, precision mode, device, seed, the flags. Written at the "
              "start and rewritten at the end (docs/run-log.md).");
  if (!d.run_json_error.empty()) ImGui::TextColored(ImVec4(1, 0.55f, 0.4f, 1), "%s", d.run_json_error.c_str());
  draw_json(d.run_json);
  if (!d.notes.empty()) {
    ImGui::Separator();
    ImGui::TextUnformatted("notes");
    for (const auto& n : d.notes) ImGui::BulletText("step %lld: %s", static_cast<long long>(n.step), n.text.c_str());
  }
  ImGui::EndChild();
}

}  // namespace hg::viewer
