#pragma once
// framework/ops/cuda_ops.h — the GPU layer: the engine's ops on CUDA tensors, Tensor in, Tensor
// out, one header per op family in framework/cuda/ (as framework/cpu/ for the CPU):
//
//   framework/cuda/  copy.h        upload, download, cast, clone, contiguous, copy_,
//                                  copy_into_view (a view's backward: narrow)
//                    elementwise.h + − × ÷ (broadcast, scalar), sum_to, unary ops, pow, add_,
//                                  mul_, fill_, dropout's mask
//                    matmul.h      matmul, linear and batched matmul: the ladder's best rung
//                                  or cuBLAS (cuda/gemm/backend.h: --gemm, --tf32)
//                    conv.h        conv2d forward and backward, one GEMM per convolution
//                    pool.h        max and average pooling
//                    reduce.h      sum_all, sum_dim, their backward
//                    softmax.h     softmax, log_softmax, fused cross entropy
//                    norm.h        batch_norm2d: statistics, apply, backward; layer_norm
//                    embedding.h   the embedding lookup and its scatter-add gradient
//                    attention.h   causal_mask, causal_softmax
//                    optim.h       the fused SGD and Adam/AdamW steps (framework/optim)
//                    amp.h         the loss scaler's unscale / check / max |g| passes
//
// Each `case Device::CUDA:` of an op in framework/ops/*.cpp is one call into this layer. A
// wrapper checks what the kernels need (the GPU, row-major memory, a dtype with kernels: F32,
// F16 or BF16), allocates the result on the GPU and calls launchers of cuda/ with raw device
// pointers; the launchers are named launch_* (cuda/ops/*.h, cuda/gemm/matmul.h), so a wrapper
// and a launcher never share a name. Autograd stays in the op: the layer records nothing.
//
// Always declared. A build with CUDA compiles framework/cuda/*.cpp; a build without compiles
// framework/cuda/no_cuda.cpp instead, where every entry throws "<op>: built without CUDA; use
// --device cpu" (and the runtime reports no GPU). So an op never needs an #if.
#include "framework/cuda/amp.h"
#include "framework/cuda/attention.h"
#include "framework/cuda/conv.h"
#include "framework/cuda/copy.h"
#include "framework/cuda/elementwise.h"
#include "framework/cuda/embedding.h"
#include "framework/cuda/matmul.h"
#include "framework/cuda/norm.h"
#include "framework/cuda/optim.h"
#include "framework/cuda/pool.h"
#include "framework/cuda/reduce.h"
#include "framework/cuda/softmax.h"
