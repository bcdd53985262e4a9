#pragma once
// The runs the viewer follows, and one memory budget for all of them.
//
// Pointed at a folder of thousands of runs (chapter 13 writes one folder per rank,
// runs/<name>/rank<k>), a viewer that read every run would take minutes and more memory than
// the machine has. So the runs share one budget of bytes of events held (an estimate, as each
// run's held_bytes; limits::kDefaultBudgetBytes, --memory-budget), and what is read follows
// what is shown:
//
//   the runs a panel shows   read first, to their end; together they may take the whole budget.
//                            When they need room, the run shown least recently is unloaded.
//   the other runs           in the window only: read in turn while the budget has room (so each
//                            panel's list of runs can offer them); one that would not fit is
//                            left unread until a panel shows it.
//   an unloaded run          its events are dropped; it is read again from the start when a
//                            panel shows it again.
//   a shown run that does    stops reading at its share of the budget, and its panels say so
//   not fit                  (as at the cap per run): show fewer runs at once.
//
// Screenshots read only the runs their picture shows, so the time they take grows with what
// the picture shows, not with the number of runs found.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "viewer/run_log.h"

namespace hg::viewer {

// One run being followed (its file is re-read as it grows).
struct RunSlot {
  std::unique_ptr<RunReader> reader;
  // Its name in file names ({run} in --screenshot): the folder relative to the folder it was
  // found under, "/" as "_" (runs/a/rank0 -> "a_rank0"); a rank's always with its job's name,
  // however it was reached (runs/a given: "a_rank0"). Distinct for the runs under one folder.
  std::string file_stem;
  bool overlay = true;      // drawn in the Scale panel's overlays
  uint32_t color = 0;       // its colour in every legend (an ImU32)
  uint64_t shown_at = 0;    // when a panel last showed it (RunSet's clock); 0: never
  bool unloaded = false;    // unloaded to make room: read again only when a panel shows it
  bool no_room = false;     // not started in the background: it would not fit the budget
  const RunData& data() const { return reader->data(); }
};

class RunSet {
 public:
  explicit RunSet(int64_t budget_bytes = limits::kDefaultBudgetBytes) : budget_(budget_bytes) {}

  // The panels index and walk the runs like a vector.
  size_t size() const { return slots_.size(); }
  bool empty() const { return slots_.empty(); }
  RunSlot& operator[](size_t i) { return slots_[i]; }
  const RunSlot& operator[](size_t i) const { return slots_[i]; }
  std::vector<RunSlot>::iterator begin() { return slots_.begin(); }
  std::vector<RunSlot>::iterator end() { return slots_.end(); }
  std::vector<RunSlot>::const_iterator begin() const { return slots_.begin(); }
  std::vector<RunSlot>::const_iterator end() const { return slots_.end(); }

  // Adds the run folders found under each root (list_run_dirs) that are not followed yet, in
  // the roots' order; a folder reached twice (runs/ and runs/a/rank0, "x" and "x/") is one run.
  // Reads nothing. Returns how many were added.
  size_t scan(const std::vector<std::string>& roots);

  // Reads for at most `seconds` (infinity: until done): first the runs in `shown`, each to its
  // end as far as the budget allows, unloading the runs shown least recently to make room;
  // then, with `background`, the other runs in turn while the budget has room. Returns true
  // when something changed.
  bool poll(const std::vector<int>& shown, double seconds, bool background);
  // True when the last poll ran out of time while reading: in the middle of a run, or with
  // runs read in turn and others perhaps still to come.
  bool busy() const { return busy_; }

  int64_t budget() const { return budget_; }
  int64_t held() const { return held_; }  // bytes of events held by all runs (estimate)
  size_t read_count() const;              // runs read (polled and not unloaded since)
  // Runs the budget keeps from being read in full: unloaded, stopped at their share, or not
  // started for lack of room.
  size_t held_back() const;

 private:
  // Polls one run at most `max_bytes` with `share` as its cap, keeping held_ up to date.
  bool poll_one(RunSlot& s, int64_t max_bytes, int64_t share);
  // Unloads the runs shown least recently (never one in `shown_now`) until held_ fits the budget.
  void make_room(const std::vector<char>& shown_now);

  std::vector<RunSlot> slots_;
  std::set<std::string> dirs_;  // each run's folder, absolute and normalised
  int64_t budget_;
  int64_t held_ = 0;
  uint64_t clock_ = 0;          // advances with every poll
  size_t next_ = 0;             // background reading: the run to look at next (in turn)
  bool busy_ = false;
};

}  // namespace hg::viewer
