#pragma once
// framework/cpu/wait_policy.h — a program's idle OpenMP threads sleep instead of spinning.
//
// halfgrad's CPU kernels run on OpenMP threads. Between two parallel regions GNU libgomp keeps
// its idle threads spinning (300,000 rounds when OMP_WAIT_POLICY is not set, for ever with
// ACTIVE) before they sleep. A training step is many short regions, and on a machine where
// anything else runs, a spinning thread holds the core a working thread needs: chapter 02's
// five epochs took 33 s instead of 7 s, chapter 14's README command 706 s instead of 106 s.
// With OMP_WAIT_POLICY=PASSIVE an idle thread sleeps at once (GOMP_SPINCOUNT 0).
//
// libgomp reads OMP_WAIT_POLICY once, while it is loaded, before main() runs: setting it in
// main() is too late for the process that sets it. So a chapter's main() starts with
// set_omp_wait_policy(argv), which sets PASSIVE and starts the same program again with the
// same arguments (execv of /proc/self/exe: one more program start, milliseconds); the new
// process loads libgomp with the policy set. A policy the caller set (./lab exports PASSIVE
// unless told otherwise; OMP_WAIT_POLICY=ACTIVE for a dedicated machine) is kept as it is.
// Where /proc/self/exe cannot be started, the program runs on with libgomp's default.
//
// To see it: OMP_DISPLAY_ENV=VERBOSE ./build/lessons/lesson_02 --help prints libgomp's
// settings twice, GOMP_SPINCOUNT '300000' before the restart and '0' after it.
#include <unistd.h>

#include <cstdlib>

namespace hg {

inline void set_omp_wait_policy(char** argv) {
  const char* chosen = std::getenv("OMP_WAIT_POLICY");
  if (chosen != nullptr && *chosen != '\0') return;  // (libgomp ignores an empty one)
  if (::setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  ::execv("/proc/self/exe", argv);  // returns only when it failed
}

}  // namespace hg
