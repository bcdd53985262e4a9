#pragma once
// The colours of the FP8 panel, one place for the panel and for the screenshot test
// (tests/viewer/png_check.cpp counts the pixels of each in the rendered plots).
#include "viewer/app/bit_colors.h"  // Rgb

namespace hg::viewer {

// One colour per tensor shown, in the order they were picked (the first one alone by default).
constexpr Rgb kFp8TensorColors[6] = {
    {250, 170, 60},   // orange
    {90, 180, 250},   // blue
    {110, 210, 120},  // green
    {200, 130, 240},  // violet
    {90, 220, 210},   // teal
    {240, 220, 90},   // yellow
};
// The format's max (448, 57344) on the amax·scale plot: above it a cast saturates.
constexpr Rgb kFp8MaxLine{235, 75, 65};
// A mark over every step that saturated some values (brighter than the line it sits above).
constexpr Rgb kFp8Saturated{255, 40, 40};

}  // namespace hg::viewer
