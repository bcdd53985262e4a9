#pragma once
// Run folders: runs/<name>/ holds one run's run.json and events.jsonl (docs/run-log.md).
//
//   main(), before any work:
//     const std::string why = hg::train::check_run_folders({"06_mlp_fp32", "06_mlp_fp16_naive"},
//                                                          f.overwrite, resuming, f.checkpoint);
//     if (!why.empty()) -> one line, exit 2
//   when a run starts:
//     hg::io::RunLog log(hg::train::claim_run_folder("06_mlp_fp32", f.overwrite, resuming), ...);
//
// A run name is one path component of safe characters: letters, digits, '.', '_' and '-',
// starting with a letter, a digit or '_', at most kMaxRunName characters. So it stays inside
// runs/ ("../x" would not), is not runs/ itself or its parent ("." and ".."), is not hidden
// from the viewer (".x"), and reads the same in every shell.
//
// Two runs never share a folder: their events would interleave, or the second would wipe
// the first. A folder that exists is refused, unless --overwrite (replace it: the old run is
// deleted when the new one starts, not before, so a program that fails on its way there
// loses nothing) or --resume (continue its log); not both, since --overwrite would delete
// the log that --resume continues.
//
// A live run's folder is never taken over, whatever the flags. claim_run_folder() locks
// runs/<name>/.lock (flock, exclusive) and holds the lock until the program ends; the kernel
// drops it however the program ends (exit, crash, kill -9), so no stale lock is ever left
// behind. Another program that finds it held refuses, --overwrite and --resume alike, naming
// the folder and the process (whose pid the holder writes into .lock). --overwrite empties
// the folder but keeps .lock, so the lock stays on one file from one run to the next.
//
// A checkpoint goes where no other run's files are: check_run_folders() refuses a
// --checkpoint inside the folder of a run that is not one of `names` (the rest of the rules
// for --checkpoint are framework/train/cli.h's CheckpointFile()).
#include <string>
#include <vector>

namespace hg::train {

inline constexpr const char* kRunsRoot = "runs";  // relative to the working folder
inline constexpr size_t kMaxRunName = 64;
inline constexpr const char* kRunLockFile = ".lock";  // in each run folder

// "" for a good run name, otherwise why not (for a "--run-name: ..." message).
std::string run_name_problem(const std::string& name);

// "runs/<name>"
std::string run_path(const std::string& name);

// Before any work: every name is a good run name, every runs/<name> is free (or may be
// replaced or continued, and no live run holds it), `checkpoint` ("" for none) is not inside
// another run's folder, and runs/ can be written. "" or the first problem, in one line.
std::string check_run_folders(const std::vector<std::string>& names, bool overwrite, bool resume,
                              const std::string& checkpoint = "");

// When the run starts: locks runs/<name> for this program, then empties it (overwrite),
// keeps it (resume), or creates it, refusing one that appeared since check_run_folders()
// (another program with the same name) or that a live run holds. Returns runs/<name> for
// io::RunLog. Throws std::runtime_error with the reason.
std::string claim_run_folder(const std::string& name, bool overwrite, bool resume);

// "" when a new file can be created in `dir` (tried with a file created and removed again,
// which answers for permissions, read-only disks and the superuser alike), else the reason.
std::string folder_write_problem(const std::string& dir);

}  // namespace hg::train
