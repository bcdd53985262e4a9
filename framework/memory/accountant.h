#pragma once
// framework/memory/accountant.h — where the bytes of a training run go.
//
// Every tensor's memory is one Storage (framework/tensor/storage.h). The accountant counts
// each Storage from allocation to free under one tag, per device:
//
//   Parameter       what the model trains and keeps: parameters and buffers (Module)
//   Gradient        the .grad of a leaf, filled by backward() (autograd, set_grad)
//   OptimizerState  momentum buffers, Adam's moments, FP32 master weights (optim, amp)
//   Activation      tensors an autograd node holds for the backward pass (record())
//   Temporary       everything else: an op's fresh output, a cast, a kernel's scratch
//
// Tagging is automatic where the engine knows what a tensor is for: a new Storage gets the
// tag of the innermost TagScope (Temporary when there is none); then
//   Module::register_parameter / Module::to     retag the model's tensors   -> Parameter
//   backward() and Tensor::set_grad             retag a leaf's .grad        -> Gradient
//   record() (every op)                         retags a Temporary input    -> Activation
//   Optimizer state_for / MasterWeights         allocate inside a TagScope  -> OptimizerState
// A program tags anything else with a scope:
//
//   { hg::memory::TagScope scope(hg::memory::Tag::OptimizerState);
//     ema = model_copy(...); }                // every Storage made here counts as optimizer state
//
// What is counted: the bytes a Storage asked for (the tensor's numel · dtype size), on the
// CPU and on the GPU (Storage::allocate goes through the CUDA caching allocator there). Not
// counted: the caching allocator's freed-but-kept blocks and the scratch buffers CUDA
// kernels take straight from it (cuda/runtime/memory.h has its own live/peak/cached
// counters for those; the report prints them beside the table), and std::vector scratch
// inside CPU kernels.
//
// Peaks. For each device the accountant keeps
//   current[tag]     bytes held now
//   tag_peak[tag]    the most each tag ever held (the tags peak at different moments)
//   peak             the largest total, with what each tag held at that moment
//   window           the same, since the last take_window() (one training step's peak)
// All functions are thread-safe.
#include <array>
#include <cstdint>

#include "framework/tensor/device.h"

namespace hg {
struct Storage;
class Tensor;
}  // namespace hg

namespace hg::memory {

enum class Tag : uint8_t { Parameter, Gradient, OptimizerState, Activation, Temporary };
inline constexpr int kTags = 5;
inline constexpr std::array<Tag, kTags> kAllTags = {Tag::Parameter, Tag::Gradient,
                                                    Tag::OptimizerState, Tag::Activation,
                                                    Tag::Temporary};

// "parameters", "gradients", "optimizer_state", "activations", "temporaries": the names
// of the run log's memory event and of the printed table.
const char* tag_name(Tag tag);

using ByTag = std::array<int64_t, kTags>;  // bytes, indexed by int(Tag)

// The total at one moment and what each tag held then.
struct Snapshot {
  int64_t total = 0;
  ByTag by_tag{};
};

struct Usage {
  ByTag current{};   // held now
  ByTag tag_peak{};  // each tag's own maximum
  Snapshot peak;     // the largest total (since the start or reset_peak())
  Snapshot window;   // the largest total since the last take_window()
  int64_t total() const;  // sum of current
};

Usage usage(Device device);

// peak and tag_peak start again from what is held now (on every device).
void reset_peak();
// Returns the window's peak of `device` and starts a new window from what is held now.
Snapshot take_window(Device device);

// ---- tagging --------------------------------------------------------------------------------

// RAII: storages allocated on this thread inside the scope get `tag`. Scopes nest; the
// innermost wins. The tag is thread-local (like NoGradGuard) so threads never mix scopes.
class TagScope {
 public:
  explicit TagScope(Tag tag);
  ~TagScope();
  TagScope(const TagScope&) = delete;
  TagScope& operator=(const TagScope&) = delete;

 private:
  Tag previous_;
};
Tag current_tag();

// Moves the bytes of the tensor's storage to `tag` (nothing for an undefined tensor).
void retag(const Tensor& t, Tag tag);
// Retags to Activation only when the storage is still Temporary: a parameter or a gradient
// fed to an op stays what it is. What record() calls for every input of a node.
void mark_saved(const Tensor& t);

// The tag of the tensor's storage (Temporary for an undefined tensor or one not counted).
Tag tag_of(const Tensor& t);

// ---- what Storage calls -----------------------------------------------------------------------
// The accountant keeps the tag of every live Storage in a map (Storage itself stays a plain
// block of memory), so these are the only two places that know about it.
void on_allocate(const Storage& s);  // counts s.bytes under current_tag()
void on_free(const Storage& s);      // uncounts them from the storage's tag

}  // namespace hg::memory
