// The runs the viewer follows, under one memory budget: see run_set.h.
#include "viewer/run_set.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

namespace hg::viewer {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// Bytes read from a run at a time, between looks at the clock and at the budget.
constexpr int64_t kPiece = 256 << 10;

// The folder as one spelling: absolute, normalised, without a trailing '/'.
fs::path one_spelling(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p;
}

int64_t events_size(const std::string& dir) {
  std::error_code ec;
  const auto n = fs::file_size(fs::path(dir) / "events.jsonl", ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

}  // namespace

size_t RunSet::scan(const std::vector<std::string>& roots) {
  size_t added = 0;
  for (const std::string& root : roots) {
    const fs::path root_path = one_spelling(root);
    for (const std::string& dir : list_run_dirs(root)) {
      const fs::path path = one_spelling(dir);
      if (!dirs_.insert(path.string()).second) continue;  // followed already
      RunSlot slot;
      slot.reader = std::make_unique<RunReader>(dir);
      // Two levels under the root: "a/rank0"; one, or the root itself: the folder's name, which
      // for a rank is "<job>/rank<k>" too.
      const fs::path rel = path.lexically_relative(root_path);
      slot.file_stem = rel.has_parent_path() ? rel.string() : run_folder_name(path.string());
      std::replace(slot.file_stem.begin(), slot.file_stem.end(), '/', '_');
      slots_.push_back(std::move(slot));
      ++added;
    }
  }
  return added;
}

size_t RunSet::read_count() const {
  return static_cast<size_t>(std::count_if(slots_.begin(), slots_.end(),
                                           [](const RunSlot& s) { return s.reader->polled(); }));
}

size_t RunSet::held_back() const {
  return static_cast<size_t>(std::count_if(slots_.begin(), slots_.end(), [](const RunSlot& s) {
    return s.unloaded || s.no_room || s.data().stopped_at_share;
  }));
}

bool RunSet::poll_one(RunSlot& s, int64_t max_bytes, int64_t share) {
  RunReader& r = *s.reader;
  const int64_t before = r.data().held_bytes;
  s.no_room = false;
  r.set_budget_share(share);
  const bool changed = r.poll(max_bytes);
  held_ += r.data().held_bytes - before;
  return changed;
}

void RunSet::make_room(const std::vector<char>& shown_now) {
  while (held_ > budget_) {
    // The run shown least recently; among runs never shown, the one found last (the window
    // reads those in order, so the first ones stay).
    RunSlot* victim = nullptr;
    for (size_t i = slots_.size(); i-- > 0;) {
      RunSlot& s = slots_[i];
      if (shown_now[i] || s.data().held_bytes == 0) continue;
      if (!victim || s.shown_at < victim->shown_at) victim = &s;
    }
    if (!victim) return;  // only shown runs hold events: each stops at its share
    held_ -= victim->data().held_bytes;
    victim->reader->unload();
    victim->unloaded = true;
  }
}

bool RunSet::poll(const std::vector<int>& shown, double seconds, bool background) {
  const auto start = Clock::now();
  auto time_left = [&] {
    return std::isinf(seconds) || std::chrono::duration<double>(Clock::now() - start).count() < seconds;
  };
  ++clock_;
  std::vector<char> shown_now(slots_.size(), 0);
  std::vector<size_t> order;  // the shown runs, each once, in the order given
  for (int i : shown) {
    if (i < 0 || size_t(i) >= slots_.size() || shown_now[i]) continue;
    shown_now[i] = 1;
    order.push_back(size_t(i));
    slots_[i].shown_at = clock_;
    slots_[i].unloaded = false;
  }
  bool changed = false;
  busy_ = false;

  // 1. The runs shown: together they may hold the whole budget, the others make room.
  for (size_t i : order) {
    RunSlot& s = slots_[i];
    do {
      int64_t others = 0;  // held by the other runs shown
      for (size_t j : order) others += j == i ? 0 : slots_[j].data().held_bytes;
      changed |= poll_one(s, kPiece, budget_ - others);
      make_room(shown_now);
    } while (!s.reader->caught_up() && time_left());
    if (!s.reader->caught_up()) {
      busy_ = true;
      return changed;
    }
  }
  if (!background) return changed;

  // 2. The others in turn, each within the room the budget has left: nothing is unloaded for
  // them. One that would not fit is not started; an unloaded one waits until it is shown.
  bool read_some = false;
  for (size_t n = 0; n < slots_.size() && time_left(); ++n) {
    const size_t i = next_ % slots_.size();
    RunSlot& s = slots_[i];
    s.no_room = !s.reader->polled() && events_size(s.data().dir) > budget_ - held_;
    if (!shown_now[i] && !s.unloaded && !s.no_room) {
      do read_some |= poll_one(s, kPiece, s.data().held_bytes + (budget_ - held_));
      while (!s.reader->caught_up() && time_left());
      if (!s.reader->caught_up()) {  // the same run first, next time
        busy_ = true;
        return changed;
      }
    }
    next_ = i + 1;
  }
  // Out of time with runs still being read in turn: more to read next time.
  busy_ = read_some && !time_left();
  return changed || read_some;
}

}  // namespace hg::viewer
