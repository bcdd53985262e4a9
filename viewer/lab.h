#pragma once
// The Lab panel's side of a live run: start halfgrad-live as a child process in a new run
// folder, append commands to its control.jsonl, and notice when it ends. No GL here.
//
// The viewer stays a reader: it never touches the run's model or log. It only starts the
// program (which writes runs/<name>/ itself), appends lines to runs/<name>/control.jsonl
// (docs/run-log.md, "The control channel"), and reads the folder like any other run. What a
// command did comes back as a `command` event in events.jsonl, applied or refused.
//
//   LabRun lab;
//   std::string why = lab.start(live_exe, {"--recipe", "dynamic_scale"});   // runs/lab_1/
//   lab.send({{"cmd", "set"}, {"key", "loss_scale"}, {"log2", -4}});
//   if (!lab.running()) show(lab.ended());   // "exit code 3 (diverged)", "killed by signal 9"
//
// A new folder every time: the first runs/lab_<N> that does not exist (halfgrad-live refuses
// one that appeared meanwhile, and says so on its exit). The child is started with
// --exit-with-parent: when the viewer ends, however it ends, the run gets SIGTERM and its
// files stay as they are (every event is a whole line; run.json is written atomically).
// running() never blocks: it asks waitpid with WNOHANG.
#include <sys/types.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hg::viewer {

// halfgrad-live next to this program (both are built into build/viewer/), or "" when absent.
std::string live_program_beside_this_one();

class LabRun {
 public:
  LabRun() = default;
  LabRun(const LabRun&) = delete;
  LabRun& operator=(const LabRun&) = delete;
  ~LabRun();  // leaves the child running: it ends with the viewer (--exit-with-parent)

  // Starts `exe` with `args` plus --run-name lab_<N> --exit-with-parent, in the current folder
  // (so its run is runs/lab_<N>). Returns "" or why not. Refused while a run is going.
  std::string start(const std::string& exe, const std::vector<std::string>& args,
                    const std::string& runs_root = "runs");
  // One line appended to control.jsonl with a single write(). "" or why not.
  std::string send(const nlohmann::json& command) const;

  bool started() const { return pid_ > 0; }
  // Whether the child still runs; the first call after it ended records how (ended()).
  bool running();
  // Waits until the child ends or `seconds` pass (screenshots: the picture after the script).
  bool wait(double seconds);
  const std::string& ended() const { return ended_; }  // "" while running
  const std::string& dir() const { return dir_; }      // runs/lab_<N>
  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string dir_, name_, ended_;
};

// How a child ended, from waitpid's status: "exit code 0 (finished)", "exit code 3 (the
// training diverged)", "killed by signal 9".
std::string describe_exit(int status);

}  // namespace hg::viewer
