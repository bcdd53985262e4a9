#pragma once
// framework/ops/ops.h — every op of the engine. Each header is one op family, forward and
// backward side by side in its .cpp.
#include "framework/ops/cast.h"         // cast (to dtype), to_device
#include "framework/ops/elementwise.h"  // add sub mul div (broadcasting), scalars, in-place helpers
#include "framework/ops/shape.h"        // reshape flatten slice contiguous clone
