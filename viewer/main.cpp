// halfgrad-viewer — what a number looks like in each format, where a layer's gradients sit
// against FP16's range, how the loss scale moves, where a run's memory went, and how each FP8
// tensor's scale follows its amax. Reads run folders (docs/run-log.md).
//
// The story of main():
//   1. read the flags; a bad value, a missing folder or an output folder that does not exist
//      is exit 2 with one line, before any work
//   2. --make-demo-runs: write synthetic demo runs and stop
//   3. find the runs to show (reading none yet) and, with {run} in --screenshot, the file each
//      picture goes to: two runs that would share one are refused, before any work; with
//      --lab or --script, start a live run (the Lab panel, viewer/lab.h)
//   4. open a window (hidden for screenshots); with no display, say so and stop
//   5. set up ImGui: font and sizes for --ui-scale
//   6. --screenshot / --measure-frames: (wait for a live run to end,) read what the view shows,
//      render offscreen, write the PNG or the timings, stop
//   7. otherwise the interactive loop: read the runs shown, then the others while the memory
//      budget has room (viewer/run_set.h), re-read growing runs, draw the panels
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>

#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "viewer/app/app.h"
#include "viewer/app/screenshot.h"
#include "framework/train/live_control.h"
#include "viewer/demo_run.h"

namespace fs = std::filesystem;
using namespace hg::viewer;
using Clock = std::chrono::steady_clock;

namespace {

std::string g_glfw_error;  // the last thing GLFW complained about
void glfw_error(int, const char* what) { g_glfw_error = what ? what : "unknown GLFW error"; }

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The most memory this process has held (Linux: VmHWM, the peak resident set), in MB; -1
// where /proc does not say.
double peak_memory_mb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return -1;
}

// ---- 1. flags ---------------------------------------------------------------------------
// A finite number in [lo, hi]. (CLI::Range lets NaN through: every comparison with NaN is
// false, so "nan" is neither below lo nor above hi.)
CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
          return "'" + text + "' is not a finite number in [" + CLI::detail::to_string(lo) + ", " +
                 CLI::detail::to_string(hi) + "]";
        return "";
      },
      "FINITE in [" + CLI::detail::to_string(lo) + " - " + CLI::detail::to_string(hi) + "]");
}

// A folder named on the command line must be one that can be read: a typo is an error, not
// an empty picture. Returns "" or the problem.
std::string check_folder(const std::string& path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) return path + ": no such folder";
  if (!fs::is_directory(st)) return path + ": not a folder (give the run folder that holds events.jsonl, or its parent)";
  fs::directory_iterator it(path, ec);
  if (ec) return path + ": cannot read: " + ec.message();
  return "";
}

// An output file: its folder must exist, and it must not be a folder itself.
std::string check_output(const std::string& flag, const std::string& path) {
  if (path.empty()) return "";
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    return flag + " " + path + ": the folder " + parent.string() + " does not exist";
  if (fs::is_directory(path, ec)) return flag + " " + path + ": is a folder";
  return "";
}

// ---- 5. ImGui: font and sizes ---------------------------------------------------------
void setup_imgui(float ui_scale) {
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // nothing written to the current folder
  ImGui::StyleColorsDark();
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowPadding = ImVec2(10, 8);
  style.FrameRounding = 3;
  style.ScaleAllSizes(ui_scale);
  // A few symbols beyond Latin-1 used in labels (–, −, ≈, ≤, ≥, →).
  static const ImWchar ranges[] = {0x0020, 0x00FF, 0x2013, 0x2014, 0x2190, 0x2193,
                                   0x2212, 0x2212, 0x2248, 0x2248, 0x2264, 0x2265, 0};
  const char* ttf = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";  // fonts-dejavu-core
  if (fs::exists(ttf)) {
    io.Fonts->AddFontFromFileTTF(ttf, 15.0f * ui_scale, nullptr, ranges);
  } else {  // ImGui's built-in bitmap font, scaled
    ImFontConfig cfg;
    cfg.SizePixels = 13.0f * ui_scale;
    io.Fonts->AddFontDefault(&cfg);
  }
}

// One frame of the whole UI. `size` > 0: draw at that size regardless of the window.
void frame(App& app, ImVec2 size, bool no_mouse, ImVec2 mouse = ImVec2(-FLT_MAX, -FLT_MAX)) {
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGuiIO& io = ImGui::GetIO();
  if (size.x > 0) {
    io.DisplaySize = size;
    io.DisplayFramebufferScale = ImVec2(1, 1);
  }
  if (no_mouse) io.MousePos = mouse;  // pictures: no hover effects, or the --mouse position
  ImGui::NewFrame();
  draw_app(app);
  ImGui::Render();
}

void clear_and_render(int w, int h) {
  glViewport(0, 0, w, h);
  glClearColor(0.08f, 0.08f, 0.10f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
}

}  // namespace

int main(int argc, char** argv) {
  // ---- 1. flags ------------------------------------------------------------------------
  CLI::App cli{"halfgrad-viewer: number formats, gradient histograms and loss scales of "
               "halfgrad runs (docs/viewer.md)"};
  std::vector<std::string> paths;
  std::string screenshot, panel_name = "bits", value, format_id, size_text = "1280x800";
  std::string layout_json, make_demo, param, mouse_text;
  std::vector<std::string> run_keys, demo_modes_list, tensors;
  float ui_scale = 1.0f;
  int64_t step = -1;
  int measure_frames = 0;
  int64_t budget_mib = limits::kDefaultBudgetBytes >> 20;
  bool heat_true = false;
  std::string per_layer = "underflow";
  bool lab = false, presenter = false;
  std::string lab_script, lab_recipe = "fp32";
  int64_t lab_steps = 0;
  double lab_wait = 300;
  DemoOptions demo;
  cli.add_option("paths", paths, "runs/ folders or single run folders (default: runs)");
  cli.add_option("--screenshot", screenshot, "render one panel into this PNG and exit; with {run} "
                                            "in the name, one PNG per run (--run, else every run)");
  cli.add_option("--panel", panel_name, "panel to show: lab, bits, gradients, scale, memory, fp8, runs "
                                        "(with --presenter: gradients, scale or memory beside the Lab's knobs)")
      ->check(CLI::IsMember({"lab", "bits", "gradients", "scale", "memory", "fp8", "runs"}));
  cli.add_flag("--lab", lab, "start a live run at once (the Lab panel; runs/lab_<N>)");
  cli.add_option("--script", lab_script, "start a live run that applies this script's commands at their "
                                         "steps (docs/run-log.md, \"The control channel\")")
      ->check(CLI::ExistingFile);
  cli.add_option("--lab-recipe", lab_recipe, "the live run's first recipe")
      ->check(CLI::IsMember(hg::train::live_recipes()))->capture_default_str();
  cli.add_option("--lab-steps", lab_steps, "the live run stops at this step (0: when told to)")
      ->check(CLI::Range(int64_t(0), limits::kMaxStep));
  cli.add_option("--lab-wait", lab_wait, "screenshots: wait at most this many seconds for the live run to end")
      ->check(finite_range(0, 3600))->capture_default_str();
  cli.add_flag("--presenter", presenter, "a projector's layout: the Lab's knobs and one panel, no tabs");
  cli.add_option("--run", run_keys, "a run folder (or name) to select; repeat to overlay several")
      ->allow_extra_args(false);  // one folder per --run, so positional paths may follow
  cli.add_option("--param", param, "gradients panel: the parameter to show");
  cli.add_option("--tensor", tensors, "fp8 panel: an FP8 tensor to show (fc1.dy); repeat to overlay several")
      ->allow_extra_args(false);
  cli.add_option("--step", step, "gradients panel: the step to show (nearest logged one)")
      ->check(CLI::Range(int64_t(0), limits::kMaxStep));
  cli.add_flag("--heat-true", heat_true, "gradients panel: heat map of the true gradient (÷ loss scale)");
  cli.add_option("--per-layer", per_layer, "gradients panel: underflow, subnormal or lost-updates per layer over time")
      ->check(CLI::IsMember({"underflow", "subnormal", "lost-updates"}))->capture_default_str();
  cli.add_option("--value", value, "bits panel: the number (decimal, 2^N, or hex bits 0x... of --format, default fp16)");
  cli.add_option("--format", format_id, "bits panel: show only this format (fp32 tf32 fp16 bf16 e4m3 e5m2)");
  cli.add_option("--size", size_text, "screenshot size WxH")->capture_default_str();
  cli.add_option("--ui-scale", ui_scale, "scale fonts and sizes, e.g. 1.5 for a projector")
      ->check(finite_range(0.5, 4.0))->capture_default_str();
  auto* screenshot_opt = cli.get_option("--screenshot");
  cli.add_option("--layout-json", layout_json, "with --screenshot: write the bit boxes' and plots' pixel rectangles here")
      ->needs(screenshot_opt);
  cli.add_option("--mouse", mouse_text, "with --screenshot: pretend the mouse is at X,Y (shows tooltips)");
  cli.add_option("--measure-frames", measure_frames, "load, render N frames offscreen, print load and frame times, exit")
      ->check(CLI::Range(1, 100000));
  cli.add_option("--memory-budget", budget_mib, "MiB of events all runs may hold together; the runs "
                                                "shown least recently are unloaded to make room")
      ->check(CLI::Range(int64_t(16), int64_t(1) << 20))->capture_default_str();
  cli.add_option("--make-demo-runs", make_demo, "write SYNTHETIC demo runs into this folder and exit");
  cli.add_option("--demo-steps", demo.steps, "demo runs: optimizer steps")
      ->check(CLI::Range(int64_t(1), int64_t(10000000)))->capture_default_str();
  cli.add_option("--demo-params", demo.params, "demo runs: parameters with histograms")
      ->check(CLI::Range(1, int(limits::kMaxParams)))->capture_default_str();
  cli.add_option("--demo-hist-every", demo.hist_every, "demo runs: a histogram every N steps")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  cli.add_option("--demo-live", demo.live_steps_per_second,
                 "demo runs: write live at this many steps a second (watch a run grow)")
      ->check(finite_range(0, 1e6));
  std::vector<std::string> all_demo_modes = demo_modes();
  all_demo_modes.insert(all_demo_modes.end(), extra_demo_modes().begin(), extra_demo_modes().end());
  cli.add_option("--demo-modes", demo_modes_list, "demo runs: which of fp32 fp16_naive static_scale dynamic_scale "
                                                  "amp_f16 amp_bf16 (the default set) fp8_delayed")
      ->check(CLI::IsMember(all_demo_modes));
  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "halfgrad-viewer: %s (see --help)\n", e.what());
    return 2;
  }
  // Sizes: from a window that still holds the panels' controls to one whose pixels (twice,
  // for the read-back) fit in 128 MB.
  int width = 0, height = 0;
  std::smatch m;
  if (!std::regex_match(size_text, m, std::regex(R"((\d{1,5})x(\d{1,5}))")) ||
      (width = std::stoi(m[1])) < 320 || width > 4096 || (height = std::stoi(m[2])) < 200 || height > 4096) {
    std::fprintf(stderr, "halfgrad-viewer: --size must be WxH with W in 320..4096 and H in 200..4096, "
                         "like 1280x800, got '%s'\n", size_text.c_str());
    return 2;
  }
  ImVec2 mouse(-FLT_MAX, -FLT_MAX);
  if (!mouse_text.empty()) {
    if (!std::regex_match(mouse_text, m, std::regex(R"((\d{1,5}),(\d{1,5}))"))) {
      std::fprintf(stderr, "halfgrad-viewer: --mouse must be X,Y like 400,300, got '%s'\n", mouse_text.c_str());
      return 2;
    }
    mouse = ImVec2(std::stof(m[1]), std::stof(m[2]));
  }
  const hg::FloatFormat* only = nullptr;
  if (!format_id.empty() && !(only = hg::find_format(format_id))) {
    std::fprintf(stderr, "halfgrad-viewer: --format '%s' is not one of fp32 tf32 fp16 bf16 e4m3 e5m2\n",
                 format_id.c_str());
    return 2;
  }
  for (const std::string& problem : {check_output("--screenshot", screenshot),
                                     check_output("--layout-json", layout_json)}) {
    if (problem.empty()) continue;
    std::fprintf(stderr, "halfgrad-viewer: %s\n", problem.c_str());
    return 2;
  }
  if (!lab_script.empty()) {  // checked whole here, so a typo is one line now, not a dead run later
    try {
      hg::train::load_script(lab_script);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "halfgrad-viewer: --script %s\n", e.what());
      return 2;
    }
  }
  lab = lab || !lab_script.empty();
  if (presenter && panel_name != "gradients" && panel_name != "scale" && panel_name != "memory") {
    if (cli.count("--panel") > 0) {
      std::fprintf(stderr, "halfgrad-viewer: --presenter shows gradients, scale or memory beside the knobs, "
                           "not --panel %s\n", panel_name.c_str());
      return 2;
    }
    panel_name = "gradients";
  }
  for (const auto& p : paths) {
    if (std::string problem = check_folder(p); !problem.empty()) {
      std::fprintf(stderr, "halfgrad-viewer: %s\n", problem.c_str());
      return 2;
    }
  }

  // ---- 2. synthetic demo runs ------------------------------------------------------------
  if (!make_demo.empty()) {
    try {
      auto t0 = Clock::now();
      auto dirs = demo_modes_list.empty() ? make_demo_runs(make_demo, demo)
                                          : make_demo_runs(make_demo, demo, demo_modes_list);
      for (const auto& d : dirs) std::printf("wrote %s (SYNTHETIC DEMO DATA)\n", d.c_str());
      std::printf("%zu runs, %lld steps each, in %.1f s\n", dirs.size(),
                  static_cast<long long>(demo.steps), seconds_since(t0));
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "halfgrad-viewer: %s\n", e.what());
      return 2;
    }
  }

  // ---- 3. the runs ---------------------------------------------------------------------
  App app;
  app.runs = RunSet(budget_mib << 20);
  app.ui_scale = ui_scale;
  app.roots = paths;
  if (app.roots.empty() && run_keys.empty()) app.roots.push_back("runs");
  for (const auto& key : run_keys)
    if (is_run_dir(key)) app.roots.push_back(key);
  app.scan();
  for (const auto& key : run_keys) {
    if (app.find_run(key) < 0) {
      std::fprintf(stderr, "halfgrad-viewer: --run %s: no run.json or events.jsonl there\n", key.c_str());
      return 2;
    }
  }
  if (!run_keys.empty()) {
    app.grads.run = app.find_run(run_keys[0]);
    app.runs_selected = app.memory.run = app.fp8.run = app.grads.run;
    for (auto& r : app.runs) r.overlay = false;
    for (const auto& key : run_keys) app.runs[app.find_run(key)].overlay = true;
  }
  app.grads.param = param;
  app.fp8.tensors = tensors;
  app.grads.step = step;
  app.grads.heat_true = heat_true;
  app.grads.per_layer = per_layer == "underflow" ? 0 : per_layer == "subnormal" ? 1 : 2;
  app.panel = panel_name == "lab" ? Panel::Lab
            : panel_name == "bits" ? Panel::Bits
            : panel_name == "gradients" ? Panel::Gradients
            : panel_name == "scale" ? Panel::Scale
            : panel_name == "memory" ? Panel::Memory
            : panel_name == "fp8" ? Panel::Fp8 : Panel::Runs;
  app.presenter = presenter;
  app.lab.live_exe = live_program_beside_this_one();
  if (!lab_script.empty()) app.lab.args = {"--script", lab_script};
  if (lab_steps > 0) app.lab.args.insert(app.lab.args.end(), {"--steps", std::to_string(lab_steps)});
  if (presenter || lab) {  // the knobs, and the panel --panel names beside them
    if (app.panel != Panel::Lab && app.panel != Panel::Bits) app.lab.view = app.panel;
    app.panel = Panel::Lab;
  }
  if (lab) {
    const auto& names = hg::train::live_recipes();
    app.lab.recipe = int(std::find(names.begin(), names.end(), lab_recipe) - names.begin());
    std::vector<std::string> args = app.lab.args;
    args.insert(args.end(), {"--recipe", lab_recipe});
    if (std::string why = app.lab.run.start(app.lab.live_exe, args); !why.empty()) {
      std::fprintf(stderr, "halfgrad-viewer: --lab: %s\n", why.c_str());
      return 1;
    }
  }
  app.bits.only = only;
  if (only) app.bits.focus = only;
  if (!value.empty() && !bits_set_text(app.bits, value, *app.bits.focus)) {
    std::fprintf(stderr, "halfgrad-viewer: --value: %s\n", app.bits.error.c_str());
    return 2;
  }
  // The pictures: one; or, with {run} in the name, one per run (those given with --run, else
  // every run found), each run alone in the view and {run} replaced by the run's file_stem
  // (runs/a/rank0 -> a_rank0). Two runs whose pictures would be one file are refused before
  // anything is written: one picture must never replace another's.
  std::vector<int> shots{-1};  // -1: the view as the flags set it
  std::vector<std::string> shot_paths{screenshot};
  if (screenshot.find("{run}") != std::string::npos) {
    shots.clear(), shot_paths.clear();
    for (const auto& key : run_keys) shots.push_back(app.find_run(key));
    if (run_keys.empty())
      for (size_t i = 0; i < app.runs.size(); ++i) shots.push_back(static_cast<int>(i));
    std::map<std::string, int> taken;  // file -> the run it shows
    for (size_t k = 0; k < shots.size(); ++k) {
      std::string path = screenshot;
      for (size_t at; (at = path.find("{run}")) != std::string::npos;)
        path.replace(at, 5, app.runs[shots[k]].file_stem);
      auto [it, fresh] = taken.emplace(path, shots[k]);
      if (!fresh && it->second != shots[k]) {
        std::fprintf(stderr, "halfgrad-viewer: --screenshot %s: the runs in %s and %s would both be written "
                             "to %s; nothing was written (take them one at a time with --run)\n",
                     screenshot.c_str(), app.runs[it->second].data().dir.c_str(),
                     app.runs[shots[k]].data().dir.c_str(), path.c_str());
        return 2;
      }
      if (fresh) shot_paths.push_back(path);
    }
    shots.clear();  // each file once, in order
    for (const auto& path : shot_paths) shots.push_back(taken.at(path));
    if (shots.empty()) {
      std::fprintf(stderr, "halfgrad-viewer: --screenshot %s: no runs found\n", screenshot.c_str());
      return 1;
    }
  }

  // ---- 4. a window ---------------------------------------------------------------------
  const bool headless = !screenshot.empty() || measure_frames > 0;
  glfwSetErrorCallback(glfw_error);
  if (!glfwInit()) {
    std::fprintf(stderr, "halfgrad-viewer: no display (%s); for screenshots run under "
                         "xvfb-run -a -s '-screen 0 1280x800x24'\n", g_glfw_error.c_str());
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  if (headless) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  GLFWwindow* window = glfwCreateWindow(headless ? width : 1280, headless ? height : 800,
                                        "halfgrad viewer", nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "halfgrad-viewer: cannot open an OpenGL 3.0 window (%s)\n", g_glfw_error.c_str());
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(1);

  // ---- 5. ImGui --------------------------------------------------------------------------
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  setup_imgui(ui_scale);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 130");

  int rc = 0;
  if (headless) {
    // ---- 6. offscreen: a screenshot, or load and frame times --------------------------------
    // Each picture reads the runs it shows and no others (App::load_view), so its time grows
    // with what it shows, not with the runs found. What a window would show in each panel's
    // problem lines, and an incomplete last line, go to stderr once per run read.
    // A picture of a live run is the picture after its script; frame times are measured while
    // it trains (from its first logged step on), reading what it writes as the window does.
    const bool measure_live = app.lab.run.started() && measure_frames > 0;
    for (auto t0 = Clock::now(); measure_live && seconds_since(t0) < lab_wait; ) {
      follow_lab_run(app);
      if (!app.lab.run.running() || (app.has_run(app.lab.run_index) && app.runs[app.lab.run_index].data().max_step >= 0))
        break;
      app.runs.poll({app.lab.run_index}, 0.03, /*background=*/false);
      glfwWaitEventsTimeout(0.05);
    }
    if (app.lab.run.started() && !measure_live) {
      if (!app.lab.run.wait(lab_wait))
        std::fprintf(stderr, "halfgrad-viewer: the live run %s still runs after %g s (--lab-wait); "
                             "the picture shows it as far as it got\n", app.lab.run.dir().c_str(), lab_wait);
      else
        std::printf("lab: %s: %s\n", app.lab.run.dir().c_str(), app.lab.run.ended().c_str());
      follow_lab_run(app);
    }
    std::vector<char> reported(app.runs.size(), 0);
    try {
      Offscreen fb(width, height);
      for (size_t k = 0; k < shots.size(); ++k) {
        const int shot = shots[k];
        const std::string& path = shot_paths[k];
        if (shot >= 0) app.show_only(shot);
        auto t0 = Clock::now();
        app.load_view();
        double load_s = seconds_since(t0);
        std::vector<BitBox> boxes;
        std::vector<PlotBox> plots;
        const int warmup = 4;  // tables and windows size themselves over the first frames
        std::vector<double> ms, ui;  // whole frame; building the UI (ImGui, our code) alone
        for (int i = 0; i < warmup + std::max(0, measure_frames); ++i) {
          if (i < warmup) {  // the runs the frame before listed (the Runs panel's rows, a legend)
            auto l0 = Clock::now();
            app.load_view();
            load_s += seconds_since(l0);
          }
          boxes.clear();
          plots.clear();
          app.bit_boxes = &boxes;
          app.plot_boxes = &plots;
          auto f0 = Clock::now();
          if (measure_live) app.poll(0.03);  // what the run wrote since the last frame
          frame(app, ImVec2(float(width), float(height)), /*no_mouse=*/true, mouse);
          double ui_ms = seconds_since(f0) * 1e3;
          fb.bind();
          clear_and_render(width, height);
          glFinish();  // wait for the GPU (or Mesa's software rasterizer) to finish the frame
          fb.unbind();
          if (i >= warmup) ms.push_back(seconds_since(f0) * 1e3), ui.push_back(ui_ms);
        }
        for (size_t r = 0; r < app.runs.size(); ++r) {
          if (reported[r] || !app.runs[r].reader->polled()) continue;
          reported[r] = 1;
          const RunData& d = app.runs[r].data();
          for (const std::string& p : run_problems(d, /*incomplete=*/true))
            std::fprintf(stderr, "halfgrad-viewer: run %s (%s): %s\n", d.name.c_str(), d.dir.c_str(), p.c_str());
        }
        if (measure_frames > 0) {
          int64_t bytes = 0, lines = 0;
          for (const auto& r : app.runs) bytes += r.reader->offset(), lines += r.data().lines;
          std::sort(ms.begin(), ms.end());
          std::sort(ui.begin(), ui.end());
          double sum = 0;
          for (double x : ms) sum += x;
          std::printf("runs: %zu found, %zu read, %.1f MB, %lld lines; load %.2f s; panel %s at %dx%d: "
                      "frame mean %.1f ms, median %.1f ms, max %.1f ms over %d frames (median %.1f ms "
                      "building the UI, the rest drawing); peak memory %.0f MB\n",
                      app.runs.size(), app.runs.read_count(), bytes / 1e6, static_cast<long long>(lines), load_s,
                      panel_id(app.panel), width, height, sum / ms.size(), ms[ms.size() / 2],
                      ms.back(), measure_frames, ui[ui.size() / 2], peak_memory_mb());
          if (measure_live && app.has_run(app.lab.run_index))
            std::printf("lab: %s trained while measured, at step %lld by the last frame (%s)\n",
                        app.lab.run.dir().c_str(), static_cast<long long>(app.runs[app.lab.run_index].data().max_step),
                        app.lab.run.running() ? "still training" : app.lab.run.ended().c_str());
        }
        if (path.empty()) continue;
        std::string err = write_png(path, width, height, fb.read());
        if (err.empty() && !layout_json.empty()) {
          nlohmann::json j = {{"size", {width, height}}, {"panel", panel_id(app.panel)},
                              {"boxes", nlohmann::json::array()}, {"plots", nlohmann::json::array()}};
          for (const auto& b : boxes)
            j["boxes"].push_back({{"format", b.format}, {"bit", b.bit}, {"field", b.field},
                                  {"value", b.value}, {"rect", {b.min.x, b.min.y, b.max.x, b.max.y}}});
          for (const auto& p : plots)
            j["plots"].push_back({{"id", p.id}, {"rect", {p.min.x, p.min.y, p.max.x, p.max.y}}});
          err = write_text_file(layout_json, j.dump(1) + "\n");
        }
        if (!err.empty()) {
          std::fprintf(stderr, "halfgrad-viewer: %s\n", err.c_str());
          rc = 1;
          break;
        }
        std::printf("wrote %s (%dx%d, panel %s)\n", path.c_str(), width, height, panel_id(app.panel));
        std::fflush(stdout);  // a picture at a time: a later crash still shows which were made
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "halfgrad-viewer: %s\n", e.what());
      rc = 1;
    }
  } else {
    // ---- 7. the interactive loop --------------------------------------------------------
    while (!glfwWindowShouldClose(window)) {
      const double now = glfwGetTime();
      bool loading = app.runs.busy();  // the last poll stopped in the middle of a run
      for (int i : app.shown_runs()) loading |= app.has_run(i) && !app.runs[i].reader->caught_up();
      if (now - app.last_scan > 2.0) {  // new run folders appear now and then
        app.scan();
        app.last_scan = now;
      }
      if (loading || (app.follow && now - app.last_poll > 0.25)) {
        app.poll(0.03);  // at most 30 ms a frame: a huge run loads without freezing the UI
        app.last_poll = now;
      }
      if (loading) glfwPollEvents();
      else glfwWaitEventsTimeout(0.25);  // idle: wake 4x a second to look for new lines
      frame(app, ImVec2(0, 0), false);
      int w, h;
      glfwGetFramebufferSize(window, &w, &h);
      clear_and_render(w, h);
      glfwSwapBuffers(window);
    }
  }

  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return rc;
}
