#pragma once
// framework/autograd/grad_mode.h — switching graph recording off.
//
// Inside a NoGradGuard's scope ops compute their outputs but record no graph: evaluation,
// optimizer updates and the backward pass itself run this way. The flag is thread-local,
// like PyTorch's torch.no_grad().
namespace hg {

bool grad_enabled();
void set_grad_enabled(bool on);

// RAII: grad recording off until the end of the scope, then back to what it was.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace hg
