#include "framework/memory/accountant.h"

#include <mutex>
#include <unordered_map>

#include "framework/tensor/storage.h"
#include "framework/tensor/tensor.h"

namespace hg::memory {
namespace {

int index(Tag t) { return static_cast<int>(t); }
int index(Device d) { return d == Device::CPU ? 0 : 1; }

struct Counters {
  Usage u;

  void add(Tag tag, int64_t bytes) {
    int64_t& now = u.current[index(tag)];
    now += bytes;
    if (now > u.tag_peak[index(tag)]) u.tag_peak[index(tag)] = now;
    const int64_t total = u.total();
    if (total > u.peak.total) u.peak = Snapshot{total, u.current};
    if (total > u.window.total) u.window = Snapshot{total, u.current};
  }
};

struct Accountant {
  std::mutex mu;
  Counters devices[2];                             // CPU, CUDA
  std::unordered_map<const Storage*, Tag> tags;    // every live Storage and what it is for
};

// Never destroyed: storages freed by static destructors at exit still find it.
Accountant& accountant() {
  static Accountant* a = new Accountant;
  return *a;
}

thread_local Tag t_current_tag = Tag::Temporary;

// Moves a storage's bytes from its tag to `to`; with only_temporary, only when it is still a
// Temporary. Under the lock: two threads may retag the same storage.
void move_bytes(const Storage& s, Tag to, bool only_temporary) {
  Accountant& a = accountant();
  std::lock_guard<std::mutex> lock(a.mu);
  auto it = a.tags.find(&s);
  if (it == a.tags.end()) return;
  const Tag from = it->second;
  if (from == to || (only_temporary && from != Tag::Temporary)) return;
  Counters& c = a.devices[index(s.device)];
  c.u.current[index(from)] -= int64_t(s.bytes);
  it->second = to;
  c.add(to, int64_t(s.bytes));  // the total is unchanged; the new tag may reach its own peak
}

}  // namespace

const char* tag_name(Tag tag) {
  switch (tag) {
    case Tag::Parameter: return "parameters";
    case Tag::Gradient: return "gradients";
    case Tag::OptimizerState: return "optimizer_state";
    case Tag::Activation: return "activations";
    case Tag::Temporary: return "temporaries";
  }
  return "?";
}

int64_t Usage::total() const {
  int64_t t = 0;
  for (int64_t b : current) t += b;
  return t;
}

Usage usage(Device device) {
  Accountant& a = accountant();
  std::lock_guard<std::mutex> lock(a.mu);
  return a.devices[index(device)].u;
}

void reset_peak() {
  Accountant& a = accountant();
  std::lock_guard<std::mutex> lock(a.mu);
  for (Counters& c : a.devices) {
    c.u.tag_peak = c.u.current;
    c.u.peak = Snapshot{c.u.total(), c.u.current};
  }
}

Snapshot take_window(Device device) {
  Accountant& a = accountant();
  std::lock_guard<std::mutex> lock(a.mu);
  Usage& u = a.devices[index(device)].u;
  const Snapshot w = u.window;
  u.window = Snapshot{u.total(), u.current};
  return w;
}

TagScope::TagScope(Tag tag) : previous_(t_current_tag) { t_current_tag = tag; }
TagScope::~TagScope() { t_current_tag = previous_; }
Tag current_tag() { return t_current_tag; }

void retag(const Tensor& t, Tag tag) {
  if (t.defined() && t.impl().storage) move_bytes(*t.impl().storage, tag, false);
}

void mark_saved(const Tensor& t) {
  if (t.defined() && t.impl().storage) move_bytes(*t.impl().storage, Tag::Activation, true);
}

Tag tag_of(const Tensor& t) {
  if (!t.defined() || !t.impl().storage) return Tag::Temporary;
  Accountant& a = accountant();
  std::lock_guard<std::mutex> lock(a.mu);
  auto it = a.tags.find(t.impl().storage.get());
  return it == a.tags.end() ? Tag::Temporary : it->second;
}

void on_allocate(const Storage& s) {
  Accountant& a = accountant();
  std::lock_guard<std::mutex> lock(a.mu);
  a.tags[&s] = t_current_tag;
  a.devices[index(s.device)].add(t_current_tag, int64_t(s.bytes));
}

void on_free(const Storage& s) {
  Accountant& a = accountant();
  std::lock_guard<std::mutex> lock(a.mu);
  auto it = a.tags.find(&s);
  if (it == a.tags.end()) return;  // never counted (its allocation failed half-way)
  a.devices[index(s.device)].u.current[index(it->second)] -= int64_t(s.bytes);
  a.tags.erase(it);
}

}  // namespace hg::memory
