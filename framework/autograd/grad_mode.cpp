#include "framework/autograd/grad_mode.h"

namespace hg {

// Thread-local: a data-loading thread turning grads off must not affect training.
static thread_local bool g_grad_enabled = true;

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }

}  // namespace hg
