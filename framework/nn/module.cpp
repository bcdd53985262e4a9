#include "framework/nn/module.h"

#include <stdexcept>

#include "framework/autograd/grad_mode.h"
#include "framework/memory/accountant.h"
#include "framework/ops/elementwise.h"

namespace hg::nn {

namespace {
std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}
}  // namespace

// Registering a tensor (and replacing it in to()) is where the engine learns that its memory
// is the model's: the accountant counts it as a parameter from then on.
void Module::register_parameter(const std::string& name, Tensor* slot) {
  slot->requires_grad_(true);
  memory::retag(*slot, memory::Tag::Parameter);
  params_.emplace_back(name, slot);
}

void Module::register_buffer(const std::string& name, Tensor* slot) {
  memory::retag(*slot, memory::Tag::Parameter);  // the model's state too (running statistics)
  buffers_.emplace_back(name, slot);
}

void Module::collect(const std::string& prefix, bool params, bool buffers,
                     std::vector<NamedTensor>& out) const {
  if (params)
    for (const auto& [name, slot] : params_)
      if (slot->defined()) out.push_back({join(prefix, name), *slot});
  if (buffers)
    for (const auto& [name, slot] : buffers_)
      if (slot->defined()) out.push_back({join(prefix, name), *slot});
  for (const auto& [name, child] : children_) child->collect(join(prefix, name), params, buffers, out);
}

void Module::collect_slots(const std::string& prefix,
                           std::vector<std::pair<std::string, Tensor*>>& out, bool params,
                           bool buffers) {
  if (params)
    for (auto& [name, slot] : params_)
      if (slot->defined()) out.emplace_back(join(prefix, name), slot);
  if (buffers)
    for (auto& [name, slot] : buffers_)
      if (slot->defined()) out.emplace_back(join(prefix, name), slot);
  for (auto& [name, child] : children_) child->collect_slots(join(prefix, name), out, params, buffers);
}

std::vector<NamedTensor> Module::named_parameters() const {
  std::vector<NamedTensor> out;
  collect("", true, false, out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& p : named_parameters()) out.push_back(p.tensor);
  return out;
}

std::vector<NamedTensor> Module::named_buffers() const {
  std::vector<NamedTensor> out;
  collect("", false, true, out);
  return out;
}

std::vector<NamedTensor> Module::state() const {
  std::vector<NamedTensor> out = named_parameters();
  for (auto& b : named_buffers()) out.push_back(b);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& p : named_parameters()) n += p.tensor.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (auto& p : named_parameters()) p.tensor.zero_grad();
}

Module& Module::to(DType dtype) {
  NoGradGuard no_grad;  // a conversion of the model is not part of any graph
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect_slots("", slots, true, false);
  for (auto& [name, slot] : slots) {
    if (slot->dtype() == dtype) continue;
    Tensor converted = slot->detach().to(dtype);
    converted.requires_grad_(true);
    memory::retag(converted, memory::Tag::Parameter);
    *slot = converted;
  }
  slots.clear();
  collect_slots("", slots, false, true);
  for (auto& [name, slot] : slots) {
    if (slot->dtype() == dtype) continue;
    *slot = slot->detach().to(dtype);
    memory::retag(*slot, memory::Tag::Parameter);
  }
  return *this;
}

Module& Module::to(Device device) {
  NoGradGuard no_grad;
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect_slots("", slots, true, false);
  for (auto& [name, slot] : slots) {
    if (slot->device() == device) continue;
    Tensor moved = slot->detach().to(device);
    moved.requires_grad_(true);
    memory::retag(moved, memory::Tag::Parameter);
    *slot = moved;
  }
  slots.clear();
  collect_slots("", slots, false, true);
  for (auto& [name, slot] : slots) {
    if (slot->device() == device) continue;
    *slot = slot->detach().to(device);
    memory::retag(*slot, memory::Tag::Parameter);
  }
  return *this;
}

void Module::load_state(const std::vector<NamedTensor>& source) {
  NoGradGuard no_grad;
  std::vector<std::pair<std::string, Tensor*>> slots;
  collect_slots("", slots, true, true);
  for (auto& [name, slot] : slots) {
    const NamedTensor* found = nullptr;
    for (const auto& s : source)
      if (s.name == name) found = &s;
    if (!found) throw std::runtime_error("load_state: no tensor named '" + name + "' in the source");
    if (found->tensor.shape() != slot->shape())
      throw std::runtime_error("load_state: '" + name + "' has shape " +
                               shape_str(found->tensor.shape()) + " in the source but " +
                               shape_str(slot->shape()) + " in the model");
    // Copy the values into the slot's own storage, on whatever device it lives, converting
    // dtype and device as needed: an optimizer built before the load holds these very
    // tensors, so it must see the new values in them (a new tensor in the slot would leave it
    // stepping the old ones, which no backward reaches again).
    if (slot->is_contiguous()) {
      copy_(*slot, found->tensor.detach());
    } else {  // a view as a parameter (no model here has one): replaced by a contiguous copy
      const bool grad = slot->requires_grad();
      *slot = found->tensor.detach().to(slot->dtype()).to(slot->device()).contiguous();
      if (grad) slot->requires_grad_(true);
    }
  }
}

void Module::str_into(const std::string& name, int depth, std::string& out) const {
  out += std::string(2 * depth, ' ') + (name.empty() ? "" : "(" + name + ") ") + describe();
  int64_t own = 0;
  for (const auto& [n, slot] : params_)
    if (slot->defined()) own += slot->numel();
  if (own > 0) out += "   [" + std::to_string(own) + " params]";
  out += "\n";
  for (const auto& [n, child] : children_) child->str_into(n, depth + 1, out);
}

std::string Module::str() const {
  std::string out;
  str_into("", 0, out);
  out += "total: " + std::to_string(num_parameters()) + " parameters\n";
  return out;
}

}  // namespace hg::nn
