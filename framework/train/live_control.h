#pragma once
// The live lab's control channel: the commands a training program reads between two steps.
//
//   runs/<name>/control.jsonl   one JSON object a line, appended by whoever drives the run
//                               (the viewer's Lab panel, or `echo '{"cmd":"pause"}' >> ...`);
//                               the program reads it from where it last stopped, whole lines
//                               only (a line still being written waits for its newline)
//   --script FILE               the same commands, each at the step it takes effect at:
//                                 at 200 set loss_scale 2^-4
//                                 at 400 set recipe amp_bf16
//                               or JSON lines with "at", or a run's own events.jsonl (its
//                               applied commands, at the steps they took effect: a replay)
//
// The commands, as JSON (docs/run-log.md, "The control channel", is the reference):
//
//   {"cmd":"pause"}  {"cmd":"resume"}  {"cmd":"stop"}  {"cmd":"step","n":10}   (step: while paused)
//   {"cmd":"set","key":"loss_scale","log2":-4}        or "value": 0.0625 (a power of two)
//   {"cmd":"set","key":"growth_interval","value":20}
//   {"cmd":"set","key":"lr","value":0.01}
//   {"cmd":"set","key":"recipe","value":"amp_bf16"}
//   {"cmd":"branch","recipe":"amp_bf16"}   a checkpoint now, and a second run from it
//   any of them with "at": STEP            takes effect when the run reaches that step
//
// Parsing checks everything that does not depend on the run (the names, the types, the
// ranges); the trainer checks the rest when it applies a command (a step that has passed,
// "step" while not paused). A refusal is one line naming the field and the value.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hg::train {

// The precision recipes of chapters 06–11 in the order of the ladder, then chapter 14's FP8
// recipes (the MLP only: live.h).
const std::vector<std::string>& live_recipes();
// The models a live run trains: chapter 02's two (nn/models/models.h) and chapter 12's GPT.
const std::vector<std::string>& live_models();

enum class CommandKind { Pause, Resume, Stop, Step, SetLossScale, SetGrowthInterval, SetLr, SetRecipe, Branch };

struct Command {
  CommandKind kind = CommandKind::Pause;
  int64_t at = -1;         // the step it takes effect at; -1: as soon as it is read
  double value = 0;        // loss_scale (the value, a power of two), lr
  int64_t count = 0;       // growth_interval; step's n
  std::string recipe;      // set recipe, branch
  nlohmann::json json;     // the command in its JSON form (what the run log records)
};

// A command, or why not (exactly one of the two is set).
struct ParsedCommand {
  std::optional<Command> command;
  std::string refusal;
};

// Limits of the values (loss scales: S and 1/S finite F32 normals, framework/amp/scale_rule.h).
inline constexpr int kMinLog2Scale = -126, kMaxLog2Scale = 127;
inline constexpr int64_t kMaxGrowthInterval = 1000000000;
inline constexpr int64_t kMaxStepsAtOnce = 1000000;
inline constexpr double kMaxLr = 10.0;
inline constexpr int64_t kMaxAtStep = int64_t(1) << 40;
inline constexpr size_t kMaxControlLineBytes = 64 * 1024;

// One command from its JSON object (a line of control.jsonl).
ParsedCommand parse_command(const nlohmann::json& j);
// One line of control.jsonl: JSON, then parse_command.
ParsedCommand parse_command_line(std::string_view line);
// One command of a script: "at 200 set loss_scale 2^-4", "at 0 pause", "at 50 step 10".
ParsedCommand parse_script_command(std::string_view text);

// A script file: text lines ("at N command"; several on one line separated by ';';
// '#' starts a comment), JSON lines with "at", or a run's events.jsonl (each "command" event
// that was applied, at its step). Sorted by step, stable. Throws std::runtime_error
// "FILE line N: why" at the first bad line: a script is checked whole before the run starts.
std::vector<Command> load_script(const std::string& path);

// control.jsonl, read from where the last read stopped.
class ControlChannel {
 public:
  explicit ControlChannel(std::string path) : path_(std::move(path)) {}

  struct Line {
    int64_t number = 0;   // 1-based line number in the file
    std::string text;     // without its newline; "" with `too_long`
    bool too_long = false;  // longer than kMaxControlLineBytes: skipped unread
  };
  // The complete lines appended since the last call (none when the file is missing).
  // A last line without its newline is left for the next call. A file that became shorter
  // than what was read (replaced or truncated) is read again from its start.
  std::vector<Line> read_new_lines();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int64_t offset_ = 0;       // bytes consumed (whole lines only)
  int64_t line_number_ = 0;  // lines consumed
};

}  // namespace hg::train
