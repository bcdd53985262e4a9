// The App: following runs on disk, and the window that holds the six panels as tabs.
#include "viewer/app/app.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "viewer/app/widgets.h"

namespace hg::viewer {

namespace fs = std::filesystem;

const char* panel_id(Panel p) {
  switch (p) {
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
  for (const auto& root : roots) {
    for (const auto& dir : list_run_dirs(root)) {
      bool known = std::any_of(runs.begin(), runs.end(),
                               [&](const RunSlot& r) { return r.data().dir == dir; });
      if (known) continue;
      RunSlot slot;
      slot.reader = std::make_unique<RunReader>(dir);
      slot.color = run_color(static_cast<int>(runs.size()));
      runs.push_back(std::move(slot));
    }
  }
}

bool App::poll(double seconds) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  bool changed = false;
  for (auto& r : runs) {
    do changed |= r.reader->poll(256 << 10);
    while (!r.reader->caught_up() && Clock::now() < deadline);
    if (Clock::now() >= deadline) break;
  }
  return changed;
}

void App::load_all() {
  scan();
  for (auto& r : runs)
    do r.reader->poll(); while (!r.reader->caught_up());
}

int App::find_run(const std::string& key) const {
  std::string norm = fs::path(key).lexically_normal().string();
  while (norm.size() > 1 && norm.back() == '/') norm.pop_back();
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& d = runs[i].data();
    if (d.name == key || fs::path(d.dir).lexically_normal().string() == norm ||
        fs::path(d.dir).filename().string() == key)
      return static_cast<int>(i);
  }
  return -1;
}

void App::show_only(int i) {
  grads.run = memory.run = fp8.run = runs_selected = i;
  for (size_t k = 0; k < runs.size(); ++k) runs[k].overlay = static_cast<int>(k) == i;
}

void draw_app(App& app) {
  // One window filling the viewport; the panels are its tabs (big targets on a projector).
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  ImGui::Begin("halfgrad viewer", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus);
  if (ImGui::BeginTabBar("panels")) {
    struct Tab {
      Panel p;
      const char* label;
      void (*draw)(App&);
    };
    const Tab tabs[] = {{Panel::Bits, "Bits", draw_bits_panel},
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
