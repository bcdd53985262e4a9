#pragma once
// The viewer's state: the runs it follows, the panel shown, and each panel's choices.
// One App lives in main(); every panel is a function draw_*_panel(App&) in its own file.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <imgui.h>

#include "framework/dtype/float_format.h"
#include "viewer/lab.h"
#include "viewer/run_log.h"
#include "viewer/run_set.h"

namespace hg::viewer {

enum class Panel { Lab, Bits, Gradients, Scale, Memory, Fp8, Runs };
const char* panel_id(Panel p);  // "lab" "bits" "gradients" "scale" "memory" "fp8" "runs"

// Where the Bits panel drew each bit box, in framebuffer pixels. Screenshot mode writes it
// next to the PNG (--layout-json) so the tests can sample the boxes' colours.
struct BitBox {
  std::string format;  // "fp16"
  int bit;             // 0 = least significant
  const char* field;   // "sign" | "exponent" | "mantissa"
  int value;           // 0 or 1
  ImVec2 min, max;
};

struct BitsState {
  double value = 0.1;
  std::string text = "0.1";            // what the input box holds (decimal or 0x... hex)
  const FloatFormat* bits_of = nullptr;  // non-null: `bits` (in this format) is the truth
  uint64_t bits = 0;
  const FloatFormat* only = nullptr;     // null: all formats one under another
  const FloatFormat* focus = &kFP16;     // the format whose every field is shown
  std::string error;                     // why the typed text was not understood
};

struct GradientsState {
  int run = -1;          // index into App::runs (-1: first run with histograms)
  std::string param;     // "" : the first parameter
  int64_t step = -1;     // the step shown (nearest logged one; -1: the last one)
  bool show_true = true; // histogram of the true gradient (÷ scale) next to the scaled one
  bool log_counts = true;
  bool heat_true = false;  // heat map of the true gradient (÷ scale) instead of the scaled one
  int per_layer = 0;       // the per-layer lines: a PerLayer (plot_math.h), 0 % below 2^-24
};

struct MemoryState {
  int run = -1;        // index into App::runs (-1: the first run with memory events)
  std::string device;  // "cpu" or "cuda" ("": the first the run logged)
};

struct Fp8State {
  int run = -1;                      // index into App::runs (-1: the first run with fp8_scale events)
  std::vector<std::string> tensors;  // shown, in the order picked (empty: the run's first tensor)
};

// The Lab panel: a live run it started (viewer/lab.h) and the knobs' values. The knobs only
// write commands; what the run did with them is read back from its log (command events).
struct LabState {
  LabRun run;
  std::string live_exe;               // halfgrad-live (beside the viewer)
  std::vector<std::string> args;      // for it: --script FILE, --steps N, ... (from the flags)
  int run_index = -1;                 // the live run among App::runs, once its folder exists
  std::vector<std::string> branches;  // run folders of its branches, added as they appear
  Panel view = Panel::Gradients;      // the panel shown beside the knobs
  int model = 0;                      // index into live_models()
  int run_model = 0;                  // the model of the run started last (its branches' model)
  int recipe = 0;                     // index into live_recipes()
  int device = 0;                     // 0: cpu, 1: cuda (offered in a CUDA build only)
  int branch_recipe = 6;              // amp_bf16
  int log2_scale = 16;
  int growth_interval = 2000;
  float lr = 0.05f;
  bool editing[3] = {};               // the scale, the growth interval, the lr: being changed
  std::string message;                // the last thing the panel could not do, or did
  int64_t rate_step = -1;             // steps per second, measured on the log's last step
  double rate_time = 0, steps_per_second = 0;
};

// Where a panel drew a plot, in framebuffer pixels (the inner rectangle, without the axes'
// labels). Screenshot mode writes them next to the PNG (--layout-json) so the tests can count
// the colours inside each plot.
struct PlotBox {
  std::string id;  // "fp8_amax", "fp8_scale", "fp8_product", "fp8_underflow"
  ImVec2 min, max;
};

// The first runs found, up to this many, are the ones the Scale panel overlays by default, and
// those a picture with no run picked looks through for one with its panel's events: past it a
// legend of every run would fill the panel, and reading them all could take minutes.
inline constexpr size_t kFirstRuns = 64;

struct App {
  std::vector<std::string> roots;  // folders the user named: runs/ or single run folders
  RunSet runs;                     // every run found, and what of them is read (run_set.h)
  Panel panel = Panel::Bits;
  bool select_panel = true;        // make the tab bar switch to `panel` on the next frame
  bool presenter = false;          // one panel and the Lab's knobs, no tabs (a projector)
  LabState lab;
  float ui_scale = 1.0f;
  BitsState bits;
  GradientsState grads;
  MemoryState memory;
  Fp8State fp8;
  int runs_selected = 0;           // Runs panel
  std::vector<int> listed;         // runs the last frame listed with what their files say (the
                                   // Runs panel's rows, the Scale panel's legend): read as if shown
  bool follow = true;              // re-read growing runs
  std::vector<BitBox>* bit_boxes = nullptr;  // set in screenshot mode: record bit boxes
  std::vector<PlotBox>* plot_boxes = nullptr;  // ... and plot rectangles
  double last_scan = -1e9, last_poll = -1e9;

  // Finds run folders under the roots (new ones are added, none removed).
  void scan();
  // The runs the current panel shows (the Scale panel's overlays, the run picked in the
  // others; none in Bits), and those the last frame listed.
  std::vector<int> shown_runs() const;
  bool has_run(int i) const { return i >= 0 && static_cast<size_t>(i) < runs.size(); }
  // "" when run i is read to its end, else why its events may still come: " yet (it is still
  // being read)", " yet (it has not been read)". For a panel's "RUN: no memory events%s."
  const char* reading(int i) const;
  // The window: reads the runs shown, then the others in turn while the memory budget has
  // room, for at most `seconds`: a huge run then loads over many frames while the window keeps
  // answering.
  bool poll(double seconds);
  // Screenshots and measurements: reads the runs the view shows, to their end, and no others.
  // A panel with no run picked shows the first run with its events: the first kFirstRuns runs
  // are read in order until one has them.
  void load_view();
  // Index of the run whose folder or name is `key`, else -1.
  int find_run(const std::string& key) const;
  // Shows run i alone: selected in the Gradients, Memory, FP8 and Runs panels, the only overlay
  // in Scale.
  void show_only(int i);
};

// Sets the Bits panel's number from text (decimal, 2^N, or hex bits of `hex_format`).
// Returns false, with s.error saying why, when the text is not understood.
bool bits_set_text(BitsState& s, const std::string& text, const FloatFormat& hex_format);

void draw_app(App& app);  // the whole window: a tab per panel
// A line when the memory budget keeps runs from being read (run_set.h): how many runs were
// found and read, what they hold, and why the others are not. Nothing when it does not.
void draw_budget_line(const App& app);
void draw_lab_panel(App& app);
// Makes the lab run's folder (and its branches') one of the runs, once it exists, and shows it.
void follow_lab_run(App& app);
void draw_bits_panel(App& app);
void draw_gradients_panel(App& app);
void draw_scale_panel(App& app);
void draw_memory_panel(App& app);
void draw_fp8_panel(App& app);
void draw_runs_panel(App& app);

}  // namespace hg::viewer
