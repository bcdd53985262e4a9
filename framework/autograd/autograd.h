#pragma once
// framework/autograd/autograd.h — the autograd engine in one include.
#include "framework/autograd/backward.h"     // run_backward (what Tensor::backward calls)
#include "framework/autograd/recompute.h"    // recompute: run a block again in backward
#include "framework/autograd/grad_mode.h"    // NoGradGuard
#include "framework/autograd/graph_print.h"  // graph_to_text, graph_to_dot
#include "framework/autograd/node.h"         // Node, record()
#include "framework/autograd/topo.h"         // topological_order
