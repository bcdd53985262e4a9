// The App: following runs on disk, and the window that holds the six panels as tabs.
#include "viewer/app/app.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "viewer/app/widgets.h"

namespace hg::viewer {

namespace fs = std::filesystem;

const char* panel_id(Panel p) {
  switch (p) {
    case Panel::Lab: return "lab";
    case Panel::Bits: return "bits";
    case Panel::Gradients: return "gradients";
    case Panel::Scale: return "scale";
    case Panel::Memory: return "memory";
    case Panel::Fp8: return "fp8";
    case Panel::Runs: return "runs";
  }
  return "?";
}

void App::scan() {
  const size_t added = runs.scan(roots);
  for (size_t i = runs.size() - added; i < runs.size(); ++i) {
    runs[i].color = run_color(static_cast<int>(i));
    runs[i].overlay = i < kFirstRuns;
  }
}

std::vector<int> App::shown_runs() const {
  std::vector<int> out;
  switch (panel == Panel::Lab ? lab.view : panel) {
    case Panel::Lab:
    case Panel::Bits: break;
    case Panel::Gradients: out = {grads.run}; break;
    case Panel::Memory: out = {memory.run}; break;
    case Panel::Fp8: out = {fp8.run}; break;
    case Panel::Runs: out = {runs_selected}; break;
    case Panel::Scale:
      for (size_t i = 0; i < runs.size(); ++i)
        if (runs[i].overlay) out.push_back(static_cast<int>(i));
      break;
  }
  out.insert(out.end(), listed.begin(), listed.end());
  return out;
}

const char* App::reading(int i) const {
  if (!has_run(i) || runs[i].reader->caught_up()) return "";
  return runs[i].reader->polled() ? " yet (it is still being read)" : " yet (it has not been read)";
}

bool App::poll(double seconds) { return runs.poll(shown_runs(), seconds, /*background=*/true); }

void App::load_view() {
  const Panel shown = panel == Panel::Lab ? lab.view : panel;
  int* pick = shown == Panel::Gradients ? &grads.run
            : shown == Panel::Memory    ? &memory.run
            : shown == Panel::Fp8       ? &fp8.run : nullptr;
  for (size_t i = 0; pick && *pick < 0 && i < std::min(runs.size(), kFirstRuns); ++i) {
    runs.poll({static_cast<int>(i)}, INFINITY, /*background=*/false);
    const RunData& d = runs[i].data();
    const bool has = shown == Panel::Gradients ? !d.grads.empty()
                   : shown == Panel::Memory    ? !d.memory.empty() : !d.fp8.empty();
    if (has) *pick = static_cast<int>(i);
  }
  runs.poll(shown_runs(), INFINITY, /*background=*/false);
}

int App::find_run(const std::string& key) const {
  // A folder in one spelling: runs/a, ./runs/a/ and /abs/runs/a are one run.
  auto spelled = [](const std::string& dir) {
    std::error_code ec;
    fs::path p = fs::absolute(dir, ec).lexically_normal();
    return p.filename().empty() ? p.parent_path() : p;
  };
  const fs::path folder = spelled(key);
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& d = runs[i].data();
    if (d.name == key || spelled(d.dir) == folder || fs::path(d.dir).filename().string() == key)
      return static_cast<int>(i);
  }
  return -1;
}

void App::show_only(int i) {
  grads.run = memory.run = fp8.run = runs_selected = i;
  for (size_t k = 0; k < runs.size(); ++k) runs[k].overlay = static_cast<int>(k) == i;
}

void draw_budget_line(const App& app) {
  const size_t held_back = app.runs.held_back();
  if (held_back == 0) return;
  ImGui::PushStyleColor(ImGuiCol_Text, IM_COL32(250, 170, 60, 255));
  ImGui::TextWrapped("%zu runs found, %zu read, holding %.0f MiB of events; the memory budget is %.0f MiB "
                     "(--memory-budget). For lack of room, %zu %s not read or not in full.",
                     app.runs.size(), app.runs.read_count(), double(app.runs.held()) / 1048576.0,
                     double(app.runs.budget()) / 1048576.0, held_back, held_back == 1 ? "run is" : "runs are");
  ImGui::PopStyleColor();
  help_marker("All runs share one memory budget (docs/viewer.md, \"Many runs\"). A run is read when a "
              "panel shows it (in the Scale panel: the ticked runs); the window reads the others in "
              "turn while there is room. When a run shown needs room, the run shown least recently "
              "is unloaded, and read again when a panel shows it again.");
}

void draw_app(App& app) {
  // One window filling the viewport; the panels are its tabs (big targets on a projector).
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  ImGui::Begin("halfgrad viewer", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus);
  app.listed.clear();  // the panel drawn below lists its own
  follow_lab_run(app);
  if (app.presenter) {  // no tabs: the knobs and one panel, as big as the window allows
    draw_lab_panel(app);
  } else if (ImGui::BeginTabBar("panels")) {
    struct Tab {
      Panel p;
      const char* label;
      void (*draw)(App&);
    };
    const Tab tabs[] = {{Panel::Lab, "Lab", draw_lab_panel},
                        {Panel::Bits, "Bits", draw_bits_panel},
                        {Panel::Gradients, "Gradients", draw_gradients_panel},
                        {Panel::Scale, "Loss scale", draw_scale_panel},
                        {Panel::Memory, "Memory", draw_memory_panel},
                        {Panel::Fp8, "FP8", draw_fp8_panel},
                        {Panel::Runs, "Runs", draw_runs_panel}};
    for (const Tab& t : tabs) {
      ImGuiTabItemFlags flags =
          (app.select_panel && app.panel == t.p) ? ImGuiTabItemFlags_SetSelected : 0;
      if (ImGui::BeginTabItem(t.label, nullptr, flags)) {
        if (!app.select_panel) app.panel = t.p;
        t.draw(app);
        ImGui::EndTabItem();
      }
    }
    app.select_panel = false;
    ImGui::EndTabBar();
  }
  ImGui::End();
}

}  // namespace hg::viewer
