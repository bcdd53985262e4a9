#pragma once
// The colours of the Memory panel's categories, bottom of the stack first (the order of
// framework/memory/accountant.h's tags), one place for the panel and for the screenshot test
// (tests/viewer/png_check.cpp counts the pixels of each in the rendered stack).
#include "viewer/app/bit_colors.h"  // Rgb

namespace hg::viewer {

// The model's own state in cool colours, what a step makes and frees in warm ones.
constexpr Rgb kMemoryColors[5] = {
    {86, 142, 214},   // parameters
    {96, 190, 140},   // gradients
    {160, 120, 210},  // optimizer state
    {236, 150, 70},   // activations
    {200, 200, 110},  // temporaries
};

}  // namespace hg::viewer
