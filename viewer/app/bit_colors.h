#pragma once
// The colours of the Bits panel's boxes, one place for the panel and for the screenshot test
// (tests/viewer/png_check.cpp samples the rendered boxes and compares against these).
// A set bit is drawn in the full colour, a clear bit in the dark one.
namespace hg::viewer {

struct Rgb {  // 0..255 each (also the heat map's ramp, plot_math.h)
  int r, g, b;
};

constexpr Rgb kSignOn{232, 84, 84}, kSignOff{92, 34, 34};
constexpr Rgb kExponentOn{80, 160, 245}, kExponentOff{28, 58, 96};
constexpr Rgb kMantissaOn{96, 204, 112}, kMantissaOff{34, 78, 42};

// The background of every plot (begin_plot, widgets.h): the screenshot test tells a plot's
// anti-aliased lines from it.
constexpr Rgb kPlotBackground{20, 22, 28};

}  // namespace hg::viewer
