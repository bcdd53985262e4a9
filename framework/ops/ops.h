#pragma once
// framework/ops/ops.h — every op of the engine. Each header is one op family, forward and
// backward side by side in its .cpp.
#include "framework/ops/cast.h"         // cast (to dtype), to_device
#include "framework/ops/elementwise.h"  // add sub mul div (broadcasting), scalars, in-place helpers
#include "framework/ops/shape.h"        // reshape flatten slice contiguous clone; views: expand transpose permute narrow split
#include "framework/ops/loss.h"         // cross_entropy (fused), mse_loss
#include "framework/ops/matmul.h"       // matmul (transpose flags, batched over leading dims), linear
#include "framework/ops/reduce.h"       // sum, mean (all or along a dim)
#include "framework/ops/softmax.h"      // softmax, log_softmax
#include "framework/ops/unary.h"        // relu gelu sigmoid tanh exp log sqrt pow square
#include "framework/ops/batch_norm.h"   // batch_norm2d (train/eval, running statistics)
#include "framework/ops/conv.h"         // conv2d (im2col + GEMM)
#include "framework/ops/dropout.h"      // dropout (inverted, seeded)
#include "framework/ops/pool.h"         // max_pool2d, avg_pool2d, global_avg_pool2d
#include "framework/ops/embedding.h"    // embedding (row lookup; backward scatter-adds)
#include "framework/ops/layer_norm.h"   // layer_norm over the last dim (statistics in F32)
#include "framework/ops/attention.h"    // causal_mask, causal_softmax (masked, scaled softmax)
